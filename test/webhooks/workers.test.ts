import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/config.ts';
import { type Runtime, createRuntime } from '../../src/runtime.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES, TEST_WEBHOOK_SECRET_KEYS } from '../helpers/stores.ts';
import { createLead, drainDeliveries, subscribe } from './helpers.ts';
import { Receiver } from './receiver.ts';
import { createSilentLogger } from '../../src/lib/logger.ts';

for (const kind of STORES) {
  describe(`webhook worker isolation on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let rx: Receiver;
    before(async () => {
      h = await startHarness(kind.name, {
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
        WEBHOOK_TIMEOUT_MS: '1500',
        WEBHOOK_ENDPOINT_CONCURRENCY: '2',
        WEBHOOK_CONCURRENCY: '8',
        WEBHOOK_POLL_INTERVAL_MS: '50',
      });
      rx = await Receiver.start();
    });
    after(async () => {
      await rx.close();
      await h.close();
    });

    it('a dead endpoint holds neither other endpoints nor first attempts (per-endpoint cap, lanes)', async () => {
      const { apiKey } = await h.account();
      let slowInFlight = 0;
      let slowMax = 0;
      rx.respond = (r) => {
        if (r.path !== '/slow') return { status: 200 };
        slowInFlight += 1;
        slowMax = Math.max(slowMax, slowInFlight);
        setTimeout(() => (slowInFlight -= 1), 1500);
        return 'hang';
      };
      await subscribe(h, apiKey, rx.url('/slow'), ['lead.created']);
      await subscribe(h, apiKey, rx.url('/fast'), ['ticket.created']);
      for (let i = 0; i < 12; i += 1) await createLead(h, apiKey);
      await h.runtime.services.webhookDispatcher.start();
      await rx.waitFor(2, 5_000);
      const started = Date.now();
      await h.request({ method: 'POST', url: '/api/v1/tickets/create.php', key: apiKey, body: { subject: 's', description: 'd' } });
      await new Promise<void>((resolve, reject) => {
        const timer = setInterval(() => {
          if (rx.received.some((r) => r.path === '/fast')) {
            clearInterval(timer);
            resolve();
          } else if (Date.now() - started > 1_000) {
            clearInterval(timer);
            reject(new Error('the fast endpoint waited behind the slow one'));
          }
        }, 5);
      });
      // Waiting behind the slow endpoint would take its 1.5 s hang; anything well under that shows isolation.
      assert.ok(Date.now() - started < 1000, `fast delivery took ${Date.now() - started} ms`);
      assert.ok(slowMax <= 2, `slow endpoint had ${slowMax} requests at once`);
      rx.respond = () => ({ status: 200 });
    });
  });
}

for (const kind of STORES) {
  describe(`webhook lanes on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let rx: Receiver;
    before(async () => {
      h = await startHarness(kind.name, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_CONCURRENCY: '2' });
      rx = await Receiver.start();
    });
    after(async () => {
      await rx.close();
      await h.close();
    });

    it('claims first attempts before due retries, and holds retries to half the slots', async () => {
      const { apiKey } = await h.account();
      rx.respond = (r) => (r.path === '/failing' ? { status: 500 } : { status: 200 });
      await subscribe(h, apiKey, rx.url('/failing'), ['lead.created']);
      await subscribe(h, apiKey, rx.url('/fresh'), ['ticket.created']);
      for (let i = 0; i < 6; i += 1) await createLead(h, apiKey);
      await drainDeliveries(h.runtime.services.webhookPump);
      assert.equal(rx.received.length, 6);
      h.clock.advance(60_000); // all six retries are due
      await h.request({ method: 'POST', url: '/api/v1/tickets/create.php', key: apiKey, body: { subject: 's', description: 'd' } });
      let inFlight = 0;
      let maxRetriesAtOnce = 0;
      rx.respond = (r) => {
        if (r.path !== '/failing') return { status: 200 };
        inFlight += 1;
        maxRetriesAtOnce = Math.max(maxRetriesAtOnce, inFlight);
        setTimeout(() => (inFlight -= 1), 30);
        return { status: 500, delayMs: 30 };
      };
      await h.runtime.services.webhookPump.runOnce();
      const after = rx.received.slice(6);
      assert.equal(after[0]?.path === '/fresh' || after[1]?.path === '/fresh', true, after.map((r) => r.path).join(','));
      assert.equal(maxRetriesAtOnce, 1, 'retries used at most half of the 2 slots');
      rx.respond = () => ({ status: 200 });
    });
  });
}

const pg = STORES.find((s) => s.name === 'postgres')!;
describe('two workers on one PostgreSQL queue', { skip: pg.skip }, () => {
  let h: Harness;
  let rx: Receiver;
  const runtimes: Runtime[] = [];
  before(async () => {
    h = await startHarness('postgres', { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' }); // set.php judges the receiver's address too
    rx = await Receiver.start();
  });
  after(async () => {
    for (const runtime of runtimes) await runtime.close();
    await rx.close();
    await h.close();
  });

  it('drain it together with no delivery sent twice', async () => {
    const N = 400;
    const { apiKey } = await h.account();
    await subscribe(h, apiKey, rx.url('/a'), ['lead.created']);
    await subscribe(h, apiKey, rx.url('/b'), ['lead.created']);
    for (let i = 0; i < N / 2; i += 1) await createLead(h, apiKey, `lead ${i}`);
    rx.respond = () => ({ status: 200, delayMs: 2 });
    const config = loadConfig({
      DATA_DIR: h.testStore.dataDir,
      DATABASE_URL: h.testStore.databaseUrl as string,
      WEBHOOK_SECRET_KEYS: TEST_WEBHOOK_SECRET_KEYS,
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
      WEBHOOK_CONCURRENCY: '16',
    });
    for (let i = 0; i < 2; i += 1) runtimes.push(await createRuntime(config, { logger: createSilentLogger() }));
    // Each worker's pump runs round after round, as its worker does when woken, both at once.
    const [one, two] = await Promise.all(runtimes.map((r) => drainDeliveries(r.services.webhookPump)));
    await rx.waitFor(N, 30_000);
    await new Promise((r) => setTimeout(r, 300));
    const keys = rx.received.map((r) => `${r.path} ${String(r.headers['webhook-id'])}`);
    assert.equal(keys.length, N, 'no request twice');
    assert.equal(new Set(keys).size, N);
    assert.equal((one ?? 0) + (two ?? 0), N);
    assert.ok((one ?? 0) > 0 && (two ?? 0) > 0, `both workers took part (${one} / ${two})`);
  });
});
