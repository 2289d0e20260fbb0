import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { createLead, deliveries, drainDeliveries, subscribe } from './helpers.ts';
import { Receiver } from './receiver.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

for (const kind of STORES) {
  describe(`housekeeping on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let rx: Receiver;
    before(async () => {
      // The dead endpoint must stay pending for 31 days, so it is not disabled after the usual 5.
      h = await startHarness(kind.name, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_LOG_RETENTION_DAYS: '30', WEBHOOK_DISABLE_AFTER_MS: String(365 * 24 * 3600 * 1000) });
      rx = await Receiver.start();
    });
    after(async () => {
      await rx.close();
      await h.close();
    });

    it('prunes finished deliveries past the retention and expired idempotency keys, and nothing else', async () => {
      const { apiKey } = await h.account();
      const { agentId } = await createFlowAgent(h, apiKey);
      await subscribe(h, apiKey, rx.url('/ok'), ['lead.created']);
      const dead = await subscribe(h, apiKey, 'http://127.0.0.1:9/closed', ['lead.created']);
      await createLead(h, apiKey, 'Old', '555-0001');
      await drainDeliveries(h.runtime.services.webhookPump);
      const create = (key: string) =>
        h.request({ method: 'POST', url: '/v2/create-web-call', key: apiKey, body: { agent_id: agentId }, headers: { 'idempotency-key': key } });
      const first = await create('k-old');
      const old = (await deliveries(h, apiKey));
      assert.equal(old.filter((d: any) => d.status === 'delivered').length, 1);
      assert.equal(old.filter((d: any) => d.status === 'pending').length, 1, 'the dead endpoint keeps retrying');

      h.clock.advance(31 * DAY_MS);
      await createLead(h, apiKey, 'New', '555-0002');
      await drainDeliveries(h.runtime.services.webhookPump);
      const { deliveriesDeleted } = await h.runtime.services.housekeeping.run();
      assert.equal(deliveriesDeleted, 1, JSON.stringify(old.map((d: any) => [d.status, d.webhook_id === dead.id, d.attempt_count])));

      const left = (await deliveries(h, apiKey));
      assert.ok(!left.some((d: any) => d.id === old.find((o: any) => o.status === 'delivered').id), 'the old delivered one is gone');
      assert.ok(left.some((d: any) => d.webhook_id === dead.id && d.created_at === old.find((o: any) => o.webhook_id === dead.id).created_at), 'a pending one is kept, however old');
      assert.ok(left.some((d: any) => d.status === 'delivered' && d.created_at === h.clock.now()), 'the recent one is kept');

      // The idempotency key is past its 24 h window and was pruned: the same key makes a new call.
      const again = await create('k-old');
      assert.equal(again.status, 201);
      assert.notEqual(again.json.call_id, first.json.call_id);
      const keys = await h.runtime.store.db.selectFrom('idempotency_keys').select('idempotency_key').execute();
      assert.deepEqual(keys.map((k) => k.idempotency_key), ['k-old']);
    });
  });
}
