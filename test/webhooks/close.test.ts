// Closing the delivery worker with a grace (shutdown): sends still unanswered when the grace ends
// are aborted, nothing is recorded for them and their leases are released, so the deliveries stay
// pending and due; attempts answered before then are recorded before close resolves.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WebhookRepository } from '../../src/storage/webhook.repository.ts';
import { DestinationPolicy } from '../../src/webhooks/destination-policy.ts';
import { WebhookHttpClient } from '../../src/webhooks/http-client.ts';
import { startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { createLead, subscribe } from './helpers.ts';
import { Receiver } from './receiver.ts';

/** Delivery attempts take up to a minute here: only the close grace can end a hung one in time. */
const ENV = { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_TIMEOUT_MS: '60000' };
/** What close may take beyond its grace: aborting, recording and releasing on a shared machine. */
const MARGIN_MS = 400;

describe('WebhookHttpClient.send with an AbortSignal', () => {
  it('destroys the request on abort and rejects with the reason; an aborted signal sends nothing', { timeout: 10_000 }, async () => {
    const rx = await Receiver.start();
    rx.respond = () => 'hang';
    const client = new WebhookHttpClient({ policy: new DestinationPolicy(['127.0.0.1/32']), connectTimeoutMs: 1_000, timeoutMs: 60_000 });
    try {
      const ctrl = new AbortController();
      const sending = client.send(rx.url(), { 'content-type': 'application/json' }, '{}', ctrl.signal);
      await rx.waitFor(1);
      const reason = new Error('stop');
      const started = performance.now();
      ctrl.abort(reason);
      await assert.rejects(sending, (error) => error === reason);
      assert.ok(performance.now() - started < 100, 'rejects at once');
      await rx.waitForDrop(2_000); // the receiver sees the connection go

      await assert.rejects(client.send(rx.url(), {}, '{}', AbortSignal.abort(reason)), (error) => error === reason);
      assert.equal(rx.received.length, 1, 'nothing sent with a signal already aborted');
    } finally {
      client.close();
      await rx.close();
    }
  });
});

for (const kind of STORES) {
  describe(`closing the webhook worker with a grace on ${kind.name}`, { skip: kind.skip }, () => {
    it('aborts a send unanswered at the end of the grace: pending, due, no lease, no attempt; an answered one is recorded', { timeout: 20_000 }, async () => {
      const h = await startHarness(kind.name, ENV);
      const rx = await Receiver.start();
      try {
        const { apiKey } = await h.account();
        rx.respond = (r) => (r.path === '/hang' ? 'hang' : { status: 200, delayMs: 100 });
        await subscribe(h, apiKey, rx.url('/hang'), ['lead.created']);
        await subscribe(h, apiKey, rx.url('/slow-ok'), ['lead.created']);
        await createLead(h, apiKey);
        const dispatcher = h.runtime.services.webhookDispatcher;
        const running = h.runtime.services.webhookPump.runOnce();
        await rx.waitFor(2); // both sends are in flight; one is answered 100 ms later, one never

        const graceMs = 200;
        const started = performance.now();
        await dispatcher.close({ graceMs });
        const ms = performance.now() - started;
        assert.ok(ms >= graceMs - 20 && ms < graceMs + MARGIN_MS, `close took ${Math.round(ms)} ms`);
        assert.equal(await running, 1, 'one attempt made: the aborted send is none');

        const db = h.testStore.store.db;
        const rows = await db.selectFrom('webhook_deliveries').selectAll().orderBy('url').execute();
        const hung = rows.find((d) => d.url === rx.url('/hang'))!;
        const ok = rows.find((d) => d.url === rx.url('/slow-ok'))!;
        assert.equal(ok.status, 'delivered', 'the attempt answered within the grace was recorded before close resolved');
        assert.equal(ok.attempts, 1);
        assert.equal(hung.status, 'pending');
        assert.equal(hung.attempts, 0);
        assert.equal(hung.locked_until, null);
        assert.equal(hung.locked_by, null);
        assert.equal(hung.last_error, null);
        assert.ok(hung.next_attempt_at !== null && hung.next_attempt_at <= h.clock.now(), 'due now');
        const attempts = await db.selectFrom('webhook_attempts').select(['delivery_id']).execute();
        assert.deepEqual(attempts.map((a) => a.delivery_id), [ok.id]);

        // Another worker may claim it at once (no lease to wait out).
        const repo = new WebhookRepository(db, h.testStore.store.dialect);
        const again = await repo.claim({ nowMs: h.clock.now(), lane: 0, limit: 10, leaseMs: 1_000, owner: 'another-worker', excludeEndpoints: [] });
        assert.deepEqual(again.map((d) => d.id), [hung.id]);
      } finally {
        await rx.close();
        await h.close();
      }
    });

    it('without a grace, lets a send run to its answer (or its attempt timeout)', async () => {
      const h = await startHarness(kind.name, ENV);
      const rx = await Receiver.start();
      try {
        const { apiKey } = await h.account();
        rx.respond = () => ({ status: 200, delayMs: 300 });
        await subscribe(h, apiKey, rx.url('/late-ok'), ['lead.created']);
        await createLead(h, apiKey);
        const dispatcher = h.runtime.services.webhookDispatcher;
        const running = h.runtime.services.webhookPump.runOnce();
        await rx.waitFor(1);
        await dispatcher.close();
        assert.equal(await running, 1);
        const row = await h.testStore.store.db.selectFrom('webhook_deliveries').selectAll().executeTakeFirstOrThrow();
        assert.equal(row.status, 'delivered');
      } finally {
        await rx.close();
        await h.close();
      }
    });
  });
}
