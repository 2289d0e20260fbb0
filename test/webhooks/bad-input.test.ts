import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

type Case = { method: 'GET' | 'POST'; url: string; body?: unknown; contentType?: string; why: string };

const long = (n: number) => 'x'.repeat(n);
const manyFields = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`f${i}`, i]));

/** Every webhook, lead and ticket route with inputs it must refuse with a 4xx JSON error. */
const CASES: Case[] = [
  ...['/api/v1/webhooks/set.php', '/api/v1/webhooks/delete.php', '/api/v1/webhooks/redeliver.php', '/api/v1/leads/create.php', '/api/v1/leads/update.php', '/api/v1/tickets/create.php'].flatMap(
    (url): Case[] => [
      { method: 'POST', url, body: '{not json', why: 'malformed JSON' },
      { method: 'POST', url, body: '[]', why: 'an array body' },
      { method: 'POST', url, body: 'null', why: 'a null body' },
      { method: 'POST', url, body: '"text"', why: 'a string body' },
      { method: 'POST', url, body: 'url=x', contentType: 'application/x-www-form-urlencoded', why: 'a form body' },
      { method: 'POST', url, body: { unexpected: true }, why: 'an unknown field only' },
    ],
  ),
  { method: 'POST', url: '/api/v1/webhooks/set.php', body: { events: ['*'] }, why: 'no url' },
  { method: 'POST', url: '/api/v1/webhooks/set.php', body: { url: 'https://example.com' }, why: 'no events' },
  { method: 'POST', url: '/api/v1/webhooks/set.php', body: { url: 42, events: ['*'] }, why: 'url a number' },
  { method: 'POST', url: '/api/v1/webhooks/set.php', body: { url: 'https://example.com', events: '*' }, why: 'events a string' },
  { method: 'POST', url: '/api/v1/webhooks/set.php', body: { url: 'https://example.com', events: [1] }, why: 'events of numbers' },
  { method: 'POST', url: '/api/v1/webhooks/set.php', body: { url: 'https://example.com', events: [] }, why: 'events empty' },
  { method: 'POST', url: '/api/v1/webhooks/set.php', body: { url: 'https://example.com', events: ['*', 'lead.created'] }, why: '* with a kind' },
  { method: 'POST', url: '/api/v1/webhooks/set.php', body: { url: 'https://example.com', events: ['lead.exploded'] }, why: 'unknown kind' },
  { method: 'POST', url: '/api/v1/webhooks/set.php', body: { url: 'https://example.com', events: Array(17).fill('lead.created') }, why: 'too many events' },
  { method: 'POST', url: '/api/v1/webhooks/set.php', body: { url: `https://example.com/${long(2100)}`, events: ['*'] }, why: 'url too long' },
  { method: 'POST', url: '/api/v1/webhooks/set.php', body: { url: 'ftp://example.com/x', events: ['*'] }, why: 'ftp url' },
  { method: 'POST', url: '/api/v1/webhooks/set.php', body: { url: 'not a url', events: ['*'] }, why: 'not a url' },
  { method: 'POST', url: '/api/v1/webhooks/set.php', body: { url: 'https://example.com', events: ['*'], id: 7 }, why: 'numeric id' },
  { method: 'POST', url: '/api/v1/webhooks/set.php', body: { url: 'https://example.com', events: ['*'], id: 'wh_nope' }, why: 'unknown id (422)' },
  { method: 'POST', url: '/api/v1/webhooks/set.php', body: { url: 'https://example.com', events: ['*'], secret: 'mine' }, why: 'a secret field' },
  { method: 'POST', url: '/api/v1/webhooks/delete.php', body: {}, why: 'neither id nor url' },
  { method: 'POST', url: '/api/v1/webhooks/delete.php', body: { id: 5 }, why: 'numeric id' },
  { method: 'POST', url: '/api/v1/webhooks/delete.php', body: { id: 'wh_x', url: 'https://example.com' }, why: 'both id and url' },
  { method: 'POST', url: '/api/v1/webhooks/delete.php', body: { id: long(200) }, why: 'absurd id' },
  { method: 'POST', url: '/api/v1/webhooks/delete.php', body: { url: 'https://nowhere.example' }, why: 'unknown url (422)' },
  { method: 'GET', url: '/api/v1/webhooks/deliveries.php?limit=0', why: 'limit 0' },
  { method: 'GET', url: '/api/v1/webhooks/deliveries.php?limit=201', why: 'limit 201' },
  { method: 'GET', url: '/api/v1/webhooks/deliveries.php?limit=ten', why: 'limit text' },
  { method: 'GET', url: '/api/v1/webhooks/deliveries.php?status=lost', why: 'unknown status' },
  { method: 'GET', url: '/api/v1/webhooks/deliveries.php?event=lead.exploded', why: 'unknown kind' },
  { method: 'GET', url: '/api/v1/webhooks/deliveries.php?pagination_key=dlv_nope', why: 'unknown pagination key' },
  { method: 'GET', url: '/api/v1/webhooks/deliveries.php?colour=red', why: 'unknown parameter' },
  { method: 'GET', url: '/api/v1/webhooks/deliveries.php?event=call.%00finished', why: 'NUL in the kind' },
  { method: 'GET', url: '/api/v1/webhooks/deliveries.php?event_id=evt_%00', why: 'NUL in event_id' },
  { method: 'GET', url: '/api/v1/webhooks/deliveries.php?webhook_id=wh_%00', why: 'NUL in webhook_id' },
  { method: 'GET', url: '/api/v1/webhooks/deliveries.php?pagination_key=dlv_%00', why: 'NUL in pagination_key' },
  { method: 'POST', url: '/api/v1/webhooks/redeliver.php', body: { delivery_id: 'dlv_\u0000' }, why: 'NUL in delivery_id' },
  { method: 'POST', url: '/api/v1/tickets/create.php', body: { subject: 's', description: 'd', call_id: 'call_\u0000' }, why: 'NUL in call_id' },
  { method: 'POST', url: '/api/v1/webhooks/redeliver.php', body: {}, why: 'no delivery_id' },
  { method: 'POST', url: '/api/v1/webhooks/redeliver.php', body: { delivery_id: 5 }, why: 'numeric delivery_id' },
  { method: 'POST', url: '/api/v1/webhooks/redeliver.php', body: { delivery_id: '' }, why: 'empty delivery_id' },
  { method: 'POST', url: '/api/v1/webhooks/redeliver.php', body: { delivery_id: 'dlv_00000000000000000000000000000000' }, why: 'unknown delivery (422)' },
  { method: 'POST', url: '/api/v1/webhooks/agent-secret.php', body: { secret: 'mine' }, why: 'a chosen secret' },
  { method: 'POST', url: '/api/v1/leads/create.php', body: {}, why: 'no fields' },
  { method: 'POST', url: '/api/v1/leads/create.php', body: { name: '', phone: '555-0100' }, why: 'empty name' },
  { method: 'POST', url: '/api/v1/leads/create.php', body: { name: long(300), phone: '555-0100' }, why: 'name too long' },
  { method: 'POST', url: '/api/v1/leads/create.php', body: { name: 'A', phone: 'call me' }, why: 'phone letters' },
  { method: 'POST', url: '/api/v1/leads/create.php', body: { name: 'A', phone: 5550100 }, why: 'phone a number' },
  { method: 'POST', url: '/api/v1/leads/create.php', body: { name: 'A', phone: '555-0100', email: 'nope' }, why: 'bad email' },
  { method: 'POST', url: '/api/v1/leads/create.php', body: { name: 'A', phone: '555-0100', notes: long(10_001) }, why: 'notes too long' },
  { method: 'POST', url: '/api/v1/leads/create.php', body: { name: 'A', phone: '555-0100', custom_fields: { a: { b: 1 } } }, why: 'nested custom field' },
  { method: 'POST', url: '/api/v1/leads/create.php', body: { name: 'A', phone: '555-0100', custom_fields: manyFields }, why: '51 custom fields' },
  { method: 'POST', url: '/api/v1/leads/create.php', body: { name: 'A', phone: '555-0100', id: 7 }, why: 'a chosen id' },
  { method: 'POST', url: '/api/v1/leads/update.php', body: { name: 'A' }, why: 'no id' },
  { method: 'POST', url: '/api/v1/leads/update.php', body: { id: '1', name: 'A' }, why: 'id a string' },
  { method: 'POST', url: '/api/v1/leads/update.php', body: { id: 0, name: 'A' }, why: 'id 0' },
  { method: 'POST', url: '/api/v1/leads/update.php', body: { id: 1.5, name: 'A' }, why: 'fractional id' },
  { method: 'POST', url: '/api/v1/leads/update.php', body: { id: 1e20, name: 'A' }, why: 'huge id' },
  { method: 'POST', url: '/api/v1/leads/update.php', body: { id: 1 }, why: 'nothing to change' },
  { method: 'POST', url: '/api/v1/leads/update.php', body: { id: 1, phone: 'x' }, why: 'bad phone' },
  { method: 'POST', url: '/api/v1/leads/update.php', body: { id: 999_999, name: 'A' }, why: 'unknown lead (422)' },
  { method: 'GET', url: '/api/v1/leads/get.php', why: 'no id' },
  { method: 'GET', url: '/api/v1/leads/get.php?id=abc', why: 'id text' },
  { method: 'GET', url: '/api/v1/leads/get.php?id=0', why: 'id 0' },
  { method: 'GET', url: '/api/v1/leads/get.php?id=-1', why: 'negative id' },
  { method: 'GET', url: '/api/v1/leads/get.php?id=1.5', why: 'fractional id' },
  { method: 'GET', url: '/api/v1/leads/get.php?id=99999999999999999999', why: 'huge id' },
  { method: 'GET', url: '/api/v1/leads/get.php?id=999999', why: 'unknown lead (422)' },
  { method: 'GET', url: '/api/v1/leads/list.php?limit=0', why: 'limit 0' },
  { method: 'GET', url: '/api/v1/leads/list.php?pagination_key=abc', why: 'pagination key text' },
  { method: 'GET', url: '/api/v1/leads/list.php?order=up', why: 'unknown parameter' },
  { method: 'POST', url: '/api/v1/tickets/create.php', body: {}, why: 'no fields' },
  { method: 'POST', url: '/api/v1/tickets/create.php', body: { subject: '', description: 'd' }, why: 'empty subject' },
  { method: 'POST', url: '/api/v1/tickets/create.php', body: { subject: 's' }, why: 'no description' },
  { method: 'POST', url: '/api/v1/tickets/create.php', body: { subject: 's', description: 'd', priority: 'asap' }, why: 'unknown priority' },
  { method: 'POST', url: '/api/v1/tickets/create.php', body: { subject: 's', description: 'd', lead_id: 'one' }, why: 'lead_id text' },
  { method: 'POST', url: '/api/v1/tickets/create.php', body: { subject: 's', description: 'd', lead_id: 0 }, why: 'lead_id 0' },
  { method: 'POST', url: '/api/v1/tickets/create.php', body: { subject: 's', description: 'd', lead_id: 999_999 }, why: 'unknown lead (422)' },
  { method: 'POST', url: '/api/v1/tickets/create.php', body: { subject: 's', description: 'd', call_id: '' }, why: 'empty call_id' },
  { method: 'POST', url: '/api/v1/tickets/create.php', body: { subject: 's', description: 'd', call_id: 'call_nope' }, why: 'unknown call (422)' },
  { method: 'POST', url: '/api/v1/tickets/create.php', body: { subject: 's', description: 'd', status: 'closed' }, why: 'a chosen status' },
  { method: 'GET', url: '/api/v1/tickets/list.php?lead_id=abc', why: 'lead_id text' },
  { method: 'GET', url: '/api/v1/tickets/list.php?limit=999', why: 'limit 999' },
];

const TABLES = ['webhooks', 'leads', 'tickets', 'webhook_events', 'webhook_deliveries', 'webhook_attempts', 'agent_webhook_secrets'] as const;

for (const kind of STORES) {
  describe(`bad input to webhook, lead and ticket routes on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    before(async () => {
      h = await startHarness(kind.name);
      ({ apiKey: key } = await h.account());
    });
    after(() => h.close());

    const counts = async () => {
      const result: Record<string, number> = {};
      for (const table of TABLES) {
        const row = await h.runtime.store.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
        result[table] = Number(row.n);
      }
      return result;
    };

    it(`refuses each of ${CASES.length} bad requests with a 4xx JSON error and writes nothing`, async () => {
      const before = await counts();
      for (const c of CASES) {
        const headers: Record<string, string> = {};
        if (c.contentType) headers['content-type'] = c.contentType;
        const res = await h.request({ method: c.method, url: c.url, key, body: c.body, headers });
        const label = `${c.method} ${c.url} (${c.why}) -> ${res.status} ${res.raw.slice(0, 200)}`;
        assert.ok(res.status >= 400 && res.status < 500, label);
        if (c.why.endsWith('(422)')) assert.equal(res.status, 422, label);
        assert.equal(res.json?.status, 'error', label);
        assert.equal(typeof res.json?.code, 'string', label);
        assert.equal(typeof res.json?.message, 'string', label);
      }
      assert.deepEqual(await counts(), before, 'nothing was written');
    });
  });
}
