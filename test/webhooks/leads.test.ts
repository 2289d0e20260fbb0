import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import type { EventKind } from '../../src/domain/webhook.ts';

for (const kind of STORES) {
  describe(`leads and tickets on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let accountId: string;
    let otherKey: string;
    before(async () => {
      h = await startHarness(kind.name);
      ({ apiKey: key, accountId } = await h.account());
      ({ apiKey: otherKey } = await h.account());
    });
    after(() => h.close());

    const post = (url: string, body: unknown, k = key) => h.request({ method: 'POST', url, key: k, body });
    const get = (url: string, k = key) => h.request({ method: 'GET', url, key: k });
    const events = (kindName: EventKind) =>
      h.runtime.store.db.selectFrom('webhook_events').selectAll().where('account_id', '=', accountId).where('kind', '=', kindName).orderBy('created_at').execute();

    it('creates a lead with an integer id and records lead.created', async () => {
      const res = await post('/api/v1/leads/create.php', { name: 'Ada Lovelace', phone: '+44 20 7946 0958', email: 'ada@example.com', custom_fields: { tier: 'gold', seats: 3 } });
      assert.equal(res.status, 201, res.raw);
      assert.equal(typeof res.json.id, 'number');
      assert.ok(Number.isInteger(res.json.id));
      assert.equal(res.json.name, 'Ada Lovelace');
      assert.equal(res.json.phone, '+44 20 7946 0958');
      assert.deepEqual(res.json.custom_fields, { tier: 'gold', seats: 3 });
      assert.equal(res.json.notes, null);
      const recorded = (await events('lead.created')).map((e) => JSON.parse(e.data));
      const data = recorded.find((d) => d.id === res.json.id);
      assert.ok(data);
      assert.equal(data.name, 'Ada Lovelace');
      assert.equal(data.phone, '+44 20 7946 0958');

      const second = await post('/api/v1/leads/create.php', { name: 'Grace', phone: '555-0100' });
      assert.ok(second.json.id > res.json.id, 'ids increase');
    });

    it('updates a lead, records lead.updated with changed_fields, nothing when nothing changed', async () => {
      const { json: lead } = await post('/api/v1/leads/create.php', { name: 'Alan', phone: '555-0101' });
      const before = (await events('lead.updated')).length;
      const res = await post('/api/v1/leads/update.php', { id: lead.id, phone: '555-0199', notes: 'call back' });
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.json.phone, '555-0199');
      assert.equal(res.json.name, 'Alan');
      const updated = (await events('lead.updated')).map((e) => JSON.parse(e.data));
      assert.equal(updated.length, before + 1);
      const data = updated.at(-1);
      assert.equal(data.id, lead.id);
      assert.equal(data.phone, '555-0199');
      assert.deepEqual(data.changed_fields.sort(), ['notes', 'phone']);
      const same = await post('/api/v1/leads/update.php', { id: lead.id, phone: '555-0199' });
      assert.equal(same.status, 200);
      assert.equal((await events('lead.updated')).length, before + 1, 'no event without a change');
      const cleared = await post('/api/v1/leads/update.php', { id: lead.id, notes: null });
      assert.equal(cleared.json.notes, null);
    });

    it('gets and lists leads newest first with pagination; 422 for another account', async () => {
      const a = await post('/api/v1/leads/create.php', { name: 'P1', phone: '555-0001' });
      const b = await post('/api/v1/leads/create.php', { name: 'P2', phone: '555-0002' });
      const got = await get(`/api/v1/leads/get.php?id=${a.json.id}`);
      assert.equal(got.status, 200);
      assert.equal(got.json.name, 'P1');
      const page = await get('/api/v1/leads/list.php?limit=1');
      assert.equal(page.json.leads.length, 1);
      assert.equal(page.json.leads[0].id, b.json.id);
      assert.equal(page.json.next_pagination_key, b.json.id);
      const next = await get(`/api/v1/leads/list.php?limit=1&pagination_key=${page.json.next_pagination_key}`);
      assert.equal(next.json.leads[0].id, a.json.id);
      assert.equal((await get(`/api/v1/leads/get.php?id=${a.json.id}`, otherKey)).status, 422);
      assert.equal((await post('/api/v1/leads/update.php', { id: a.json.id, name: 'X' }, otherKey)).status, 422);
      assert.ok(!(await get('/api/v1/leads/list.php', otherKey)).json.leads.some((l: any) => l.id === a.json.id));
      assert.equal((await get('/api/v1/leads/get.php?id=999999999')).status, 422);
    });

    it('creates tickets with integer ids linked to a lead and a call of the account; records ticket.created', async () => {
      const { json: lead } = await post('/api/v1/leads/create.php', { name: 'T', phone: '555-0003' });
      const res = await post('/api/v1/tickets/create.php', { subject: 'Broken', description: 'It broke', priority: 'high', lead_id: lead.id });
      assert.equal(res.status, 201, res.raw);
      assert.ok(Number.isInteger(res.json.id));
      assert.equal(res.json.priority, 'high');
      assert.equal(res.json.status, 'open');
      assert.equal(res.json.lead_id, lead.id);
      const defaulted = await post('/api/v1/tickets/create.php', { subject: 'S', description: '' });
      assert.equal(defaulted.json.priority, 'normal');
      const recorded = (await events('ticket.created')).map((e) => JSON.parse(e.data));
      assert.ok(recorded.some((d) => d.id === res.json.id && d.subject === 'Broken'));
      assert.equal((await post('/api/v1/tickets/create.php', { subject: 'S', description: 'd', lead_id: lead.id }, otherKey)).status, 422);
      assert.equal((await post('/api/v1/tickets/create.php', { subject: 'S', description: 'd', call_id: 'call_00000000000000000000000000000000' })).status, 422);
      const listed = await get('/api/v1/tickets/list.php');
      assert.equal(listed.json.tickets[0].id, defaulted.json.id);
      const byLead = await get(`/api/v1/tickets/list.php?lead_id=${lead.id}`);
      assert.deepEqual(byLead.json.tickets.map((t: any) => t.id), [res.json.id]);
      assert.equal((await get('/api/v1/tickets/list.php', otherKey)).json.tickets.length, 0);
    });

    it('creates leads and tickets for the flow tools, with the call id, checking the fields', async () => {
      const lead = await h.runtime.services.leads.createLead(accountId, { name: 'From a call', phone: '555 0104' }, { callId: 'call_x' });
      assert.equal(lead.call_id, 'call_x');
      await assert.rejects(h.runtime.services.leads.createLead(accountId, { name: '', phone: 'not a phone' }), /invalid|name|phone/i);
      const ticket = await h.runtime.services.tickets.createTicket(accountId, { subject: 'From a call', description: 'd', lead_id: lead.id });
      assert.equal(ticket.lead_id, lead.id);
    });
  });
}
