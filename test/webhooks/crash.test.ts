import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { createLead, subscribe } from './helpers.ts';
import { type ChildServer, kill9, startServer, stop } from './child.ts';
import { Receiver } from './receiver.ts';

const N = 150;

for (const kind of STORES) {
  describe(`webhook durability across SIGKILL on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let rx: Receiver;
    const children: ChildServer[] = [];
    before(async () => {
      h = await startHarness(kind.name, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' }); // set.php judges the receiver's address too
      rx = await Receiver.start();
    });
    after(async () => {
      for (const child of children) await kill9(child);
      await rx.close();
      await h.close();
    });

    it('delivers every pending event after a restart, once per webhook-id', async () => {
      const { apiKey } = await h.account();
      await subscribe(h, apiKey, rx.url('/durable'), ['lead.created']);
      // The harness's own worker is not started: these events wait in the outbox.
      for (let i = 0; i < N; i += 1) await createLead(h, apiKey, `lead ${i}`);
      rx.respond = () => ({ status: 200, delayMs: 40 }); // slow: the kill lands mid-queue

      const env: Record<string, string> = {
        DATA_DIR: h.testStore.dataDir,
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
        WEBHOOK_TIMEOUT_MS: '1000',
        WEBHOOK_ENDPOINT_CONCURRENCY: '4',
        WEBHOOK_POLL_INTERVAL_MS: '100',
      };
      if (h.testStore.databaseUrl) env.DATABASE_URL = h.testStore.databaseUrl;
      const first = await startServer(env);
      children.push(first);
      await rx.waitFor(20, 20_000);
      await kill9(first);
      const beforeRestart = rx.received.length;
      assert.ok(beforeRestart < N, `killed mid-queue (${beforeRestart} of ${N})`);

      // More events while no worker runs at all.
      for (let i = 0; i < 10; i += 1) await createLead(h, apiKey, `while down ${i}`);
      rx.respond = () => ({ status: 200 });
      const second = await startServer(env);
      children.push(second);

      const total = N + 10;
      const deadline = Date.now() + 30_000;
      const ids = () => new Set(rx.received.map((r) => r.headers['webhook-id']));
      while (ids().size < total && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 300)); // anything extra would arrive now
      assert.equal(ids().size, total, 'every event arrived');
      const duplicates = rx.received.length - total;
      // Only the attempts in flight at the kill (at most the endpoint cap) may be sent again.
      assert.ok(duplicates <= 4, `${duplicates} duplicates`);
      const names = new Set(rx.received.map((r) => r.json.data.name));
      assert.equal(names.size, total);
      // On PostgreSQL a delivery leased by the killed worker is taken over once its lease lapses.
      const pending = async () =>
        (await h.runtime.store.db.selectFrom('webhook_deliveries').select('status').where('status', '!=', 'delivered').execute()).length;
      while ((await pending()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      assert.equal(await pending(), 0, 'every delivery is recorded as delivered');
      const count = await h.runtime.store.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      assert.equal(Number(count.n), total);
      const duplicatesAfter = rx.received.length - total;
      assert.ok(duplicatesAfter <= 4, `${duplicatesAfter} duplicates`);
      await stop(second);
    });
  });
}

const pg = STORES.find((s) => s.name === 'postgres')!;

describe('two server processes on one PostgreSQL queue', { skip: pg.skip }, () => {
  let h: Harness;
  let rx: Receiver;
  const children: ChildServer[] = [];
  before(async () => {
    h = await startHarness('postgres', { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' }); // set.php judges the receiver's address too
    rx = await Receiver.start();
  });
  after(async () => {
    for (const child of children) await stop(child);
    await rx.close();
    await h.close();
  });

  it('share the deliveries with none sent twice', async () => {
    const total = 120;
    const { apiKey } = await h.account();
    await subscribe(h, apiKey, rx.url('/shared'), ['lead.created']);
    for (let i = 0; i < total; i += 1) await createLead(h, apiKey, `lead ${i}`);
    // Each process sends at most 4 at once; more than 4 in flight means both are sending. Each
    // answer takes 200 ms, so one process alone needs 6 s for the 120: longer than the two
    // processes' start-up can differ under load (at 30 ms, one process that started first sent
    // all 120 before the other was up).
    const answerMs = 200;
    let inFlight = 0;
    let maxInFlight = 0;
    rx.respond = () => {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      setTimeout(() => (inFlight -= 1), answerMs);
      return { status: 200, delayMs: answerMs };
    };
    const env: Record<string, string> = {
      DATA_DIR: h.testStore.dataDir,
      DATABASE_URL: h.testStore.databaseUrl as string,
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
      WEBHOOK_CONCURRENCY: '4',
      WEBHOOK_ENDPOINT_CONCURRENCY: '4',
      WEBHOOK_POLL_INTERVAL_MS: '50',
    };
    const started = await Promise.all([startServer(env), startServer(env)]);
    children.push(...started);
    const ids = () => new Set(rx.received.map((r) => r.headers['webhook-id']));
    const deadline = Date.now() + 30_000;
    while (ids().size < total && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300)); // a duplicate would arrive now
    assert.equal(ids().size, total, 'every event arrived');
    assert.equal(rx.received.length, total, 'none was sent twice');
    assert.ok(maxInFlight > 4, `both processes sent (at most ${maxInFlight} in flight)`);
  });
});
