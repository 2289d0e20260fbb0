import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { createLead, deliveries, subscribe } from './helpers.ts';

for (const kind of STORES) {
  describe(`account isolation over every webhook, lead and ticket route on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    before(async () => {
      h = await startHarness(kind.name);
    });
    after(() => h.close());

    it("never shows or changes one account's records to another account's key", async () => {
      const a = await h.account();
      const b = await h.account();
      const hook = await subscribe(h, a.apiKey, 'https://example.com/a', ['*']);
      const lead = await createLead(h, a.apiKey, 'Private Person', '555-0142');
      const ticket = await h.request({ method: 'POST', url: '/api/v1/tickets/create.php', key: a.apiKey, body: { subject: 'secret', description: 'd', lead_id: lead.id } });
      const [delivery] = await deliveries(h, a.apiKey);
      assert.ok(delivery);
      const as = (method: 'GET' | 'POST', url: string, body?: unknown) => h.request({ method, url, key: b.apiKey, body });

      assert.deepEqual((await as('GET', '/api/v1/webhooks/list.php')).json.webhooks, []);
      assert.equal((await as('POST', '/api/v1/webhooks/set.php', { id: hook.id, url: 'https://evil.example', events: ['*'] })).status, 422);
      assert.equal((await as('POST', '/api/v1/webhooks/delete.php', { id: hook.id })).status, 422);
      assert.equal((await as('POST', '/api/v1/webhooks/delete.php', { url: 'https://example.com/a' })).status, 422);
      assert.deepEqual((await as('GET', `/api/v1/webhooks/deliveries.php?webhook_id=${hook.id}`)).json.deliveries, []);
      assert.deepEqual((await as('GET', `/api/v1/webhooks/deliveries.php?event_id=${delivery.event_id}`)).json.deliveries, []);
      assert.equal((await as('GET', `/api/v1/webhooks/deliveries.php?pagination_key=${delivery.id}`)).status, 400);
      assert.equal((await as('POST', '/api/v1/webhooks/redeliver.php', { delivery_id: delivery.id })).status, 422);
      const secretA = (await h.request({ method: 'GET', url: '/api/v1/webhooks/agent-secret.php', key: a.apiKey })).json.secret;
      const secretB = (await as('GET', '/api/v1/webhooks/agent-secret.php')).json.secret;
      assert.notEqual(secretA, secretB);
      await as('POST', '/api/v1/webhooks/agent-secret.php', {});
      assert.equal((await h.request({ method: 'GET', url: '/api/v1/webhooks/agent-secret.php', key: a.apiKey })).json.secret, secretA);

      assert.equal((await as('GET', `/api/v1/leads/get.php?id=${lead.id}`)).status, 422);
      assert.equal((await as('POST', '/api/v1/leads/update.php', { id: lead.id, name: 'Hijacked' })).status, 422);
      assert.deepEqual((await as('GET', '/api/v1/leads/list.php')).json.leads, []);
      assert.equal((await as('POST', '/api/v1/tickets/create.php', { subject: 's', description: 'd', lead_id: lead.id })).status, 422);
      assert.deepEqual((await as('GET', '/api/v1/tickets/list.php')).json.tickets, []);
      assert.deepEqual((await as('GET', `/api/v1/tickets/list.php?lead_id=${lead.id}`)).json.tickets, []);

      // A's records are unchanged, and B's requests made no event for A.
      const still = await h.request({ method: 'GET', url: `/api/v1/leads/get.php?id=${lead.id}`, key: a.apiKey });
      assert.equal(still.json.name, 'Private Person');
      const listed = await h.request({ method: 'GET', url: '/api/v1/tickets/list.php', key: a.apiKey });
      assert.deepEqual(listed.json.tickets.map((t: any) => t.id), [ticket.json.id]);
      assert.equal((await deliveries(h, a.apiKey)).length, 2);
    });
  });
}
