import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { verifyWebhook } from '../../src/index.ts';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { createLead, deliveries, drainDeliveries, expectedSignatures, subscribe } from './helpers.ts';
import { Receiver } from './receiver.ts';

const ENV = { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_TIMEOUT_MS: '800', WEBHOOK_CONNECT_TIMEOUT_MS: '400' };

for (const kind of STORES) {
  describe(`webhook delivery on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let rx: Receiver;
    before(async () => {
      h = await startHarness(kind.name, ENV);
      rx = await Receiver.start();
    });
    after(async () => {
      await rx.close();
      await h.close();
    });
    const drain = () => drainDeliveries(h.runtime.services.webhookPump);
    const at = (path: string) => rx.received.filter((r) => r.path === path);

    it('POSTs {event, data, sent_at} with the spec and Standard Webhooks headers, signed over the raw bytes', async () => {
      const { apiKey } = await h.account();
      const hook = await subscribe(h, apiKey, rx.url('/shape'), ['lead.created']);
      const lead = await createLead(h, apiKey, 'Ada Lovelace', '+1 555 0100');
      await drain();
      const [got] = at('/shape');
      assert.ok(got, 'delivered');
      assert.equal(at('/shape').length, 1);
      assert.deepEqual(Object.keys(got.json), ['event', 'data', 'sent_at']);
      assert.equal(got.json.event, 'lead.created');
      assert.equal(got.json.data.id, lead.id);
      assert.ok(Number.isInteger(got.json.data.id));
      assert.equal(got.json.data.name, 'Ada Lovelace');
      assert.equal(got.json.data.phone, '+1 555 0100');
      assert.match(got.json.sent_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.equal(got.headers['content-type'], 'application/json');
      assert.equal(got.headers['x-service-event'], 'lead.created');
      assert.match(got.headers['user-agent'] ?? '', /^Switchboard-Webhooks\//);
      const id = got.headers['webhook-id'] as string;
      const timestamp = got.headers['webhook-timestamp'] as string;
      assert.match(id, /^evt_[0-9a-f]{32}$/);
      assert.equal(Number(timestamp), Math.floor(h.clock.now() / 1000));
      const expected = expectedSignatures(hook.secret, got.raw, id, timestamp);
      assert.equal(got.headers['x-service-signature'], expected.service);
      assert.match(got.headers['x-service-signature'], /^sha256=[0-9a-f]{64}$/);
      assert.equal(got.headers['webhook-signature'], expected.standard);
      const verified = verifyWebhook(got.raw, got.headers, hook.secret, { nowMs: h.clock.now() });
      assert.equal(verified.event, 'lead.created');
      assert.equal(verified.id, id);
      assert.throws(() => verifyWebhook(Buffer.concat([got.raw, Buffer.from(' ')]), got.headers, hook.secret, { nowMs: h.clock.now() }));
      assert.throws(() => verifyWebhook(got.raw, got.headers, hook.secret, { nowMs: h.clock.now() + 301_000 }), /timestamp/);
      const log = await deliveries(h, apiKey);
      assert.equal(log[0].status, 'delivered');
      assert.equal(log[0].attempts[0].status_code, 200);
      assert.equal(typeof log[0].attempts[0].latency_ms, 'number');
    });

    it('sends each kind to "*" and to the subscriptions naming it, nothing else', async () => {
      const { apiKey } = await h.account();
      await subscribe(h, apiKey, rx.url('/all'), ['*']);
      await subscribe(h, apiKey, rx.url('/tickets'), ['ticket.created']);
      await subscribe(h, apiKey, rx.url('/updates'), ['lead.updated']);
      const lead = await createLead(h, apiKey);
      await h.request({ method: 'POST', url: '/api/v1/leads/update.php', key: apiKey, body: { id: lead.id, name: 'Changed' } });
      await h.request({ method: 'POST', url: '/api/v1/tickets/create.php', key: apiKey, body: { subject: 's', description: 'd', lead_id: lead.id } });
      await drain();
      assert.deepEqual(at('/all').map((r) => r.json.event).sort(), ['lead.created', 'lead.updated', 'ticket.created']);
      assert.deepEqual(at('/tickets').map((r) => r.json.event), ['ticket.created']);
      assert.deepEqual(at('/updates').map((r) => r.json.event), ['lead.updated']);
      assert.deepEqual(at('/updates')[0]?.json.data.changed_fields, ['name']);
      assert.equal(at('/updates')[0]?.json.data.name, 'Changed');
    });

    it("sends call.finished once per call to subscribers and to the agent's webhook_url, signed with the agent secret", async () => {
      const { apiKey } = await h.account();
      const hook = await subscribe(h, apiKey, rx.url('/calls'), ['call.finished']);
      const { agentId } = await createFlowAgent(h, apiKey, { webhook_url: rx.url('/agent') });
      const call = await h.request({ method: 'POST', url: '/v2/create-web-call', key: apiKey, body: { agent_id: agentId } });
      assert.equal(call.status, 201);
      h.clock.advance(h.config.accessTokenTtlMs + 1);
      await h.runtime.services.lifecycle.sweepUnjoined();
      await h.runtime.services.lifecycle.sweepUnjoined();
      await drain();
      const sub = at('/calls').filter((r) => r.json.data.call_id === call.json.call_id);
      const agent = at('/agent').filter((r) => r.json.data.call_id === call.json.call_id);
      assert.equal(sub.length, 1);
      assert.equal(agent.length, 1);
      assert.equal(sub[0]?.json.data.call_status, 'error');
      assert.equal(sub[0]?.json.data.disconnection_reason, 'error_user_not_joined');
      assert.equal(agent[0]?.headers['x-service-event'], 'call.finished');
      verifyWebhook(sub[0].raw, sub[0].headers, hook.secret, { nowMs: h.clock.now() });
      const secret = await h.request({ method: 'GET', url: '/api/v1/webhooks/agent-secret.php', key: apiKey });
      assert.equal(secret.status, 200);
      assert.match(secret.json.secret, /^whsec_/);
      verifyWebhook(agent[0].raw, agent[0].headers, secret.json.secret, { nowMs: h.clock.now() });
      assert.throws(() => verifyWebhook(agent[0]!.raw, agent[0]!.headers, hook.secret, { nowMs: h.clock.now() }));
      const rotated = await h.request({ method: 'POST', url: '/api/v1/webhooks/agent-secret.php', key: apiKey, body: {} });
      assert.notEqual(rotated.json.secret, secret.json.secret);
      assert.equal((await h.request({ method: 'GET', url: '/api/v1/webhooks/agent-secret.php', key: apiKey })).json.secret, rotated.json.secret);
      const log = await deliveries(h, apiKey, '?event=call.finished');
      assert.equal(log.length, 2);
      assert.ok(log.some((d) => d.webhook_id === null && d.url === rx.url('/agent')));
    });

    it('sends nothing to a deleted webhook (pending deliveries are cancelled)', async () => {
      const { apiKey } = await h.account();
      const hook = await subscribe(h, apiKey, rx.url('/deleted'), ['*']);
      await createLead(h, apiKey);
      await h.request({ method: 'POST', url: '/api/v1/webhooks/delete.php', key: apiKey, body: { id: hook.id } });
      await createLead(h, apiKey);
      await drain();
      assert.equal(at('/deleted').length, 0);
      const log = await deliveries(h, apiKey);
      assert.deepEqual(log.map((d) => d.status), ['cancelled']);
    });

    it('disables a webhook answered 410 (list.php shows it) and sends it nothing more', async () => {
      const { apiKey } = await h.account();
      rx.respond = (r) => (r.path === '/gone' ? { status: 410 } : { status: 200 });
      try {
        const hook = await subscribe(h, apiKey, rx.url('/gone'), ['*']);
        await createLead(h, apiKey);
        await drain();
        assert.equal(at('/gone').length, 1);
        const listed = await h.request({ method: 'GET', url: '/api/v1/webhooks/list.php', key: apiKey });
        const row = listed.json.webhooks.find((w: any) => w.id === hook.id);
        assert.equal(row.status, 'disabled');
        assert.equal(row.disabled_reason, 'gone');
        await createLead(h, apiKey);
        h.clock.advance(3_600_000);
        await drain();
        assert.equal(at('/gone').length, 1, 'nothing after the 410');
        const log = await deliveries(h, apiKey, `?webhook_id=${hook.id}&status=failed`);
        assert.equal(log[0].attempts[0].outcome, 'gone');
        // set.php re-enables it.
        const again = await h.request({ method: 'POST', url: '/api/v1/webhooks/set.php', key: apiKey, body: { id: hook.id, url: rx.url('/gone'), events: ['*'] } });
        assert.equal(again.json.status, 'active');
      } finally {
        rx.respond = () => ({ status: 200 });
      }
    });

    it('keeps two accounts apart: events, deliveries and the log', async () => {
      const a = await h.account();
      const b = await h.account();
      await subscribe(h, a.apiKey, rx.url('/iso-a'), ['*']);
      await subscribe(h, b.apiKey, rx.url('/iso-b'), ['*']);
      await createLead(h, a.apiKey, 'only-a');
      await drain();
      assert.equal(at('/iso-a').length, 1);
      assert.equal(at('/iso-b').length, 0);
      assert.equal((await deliveries(h, b.apiKey)).length, 0);
      const [mine] = await deliveries(h, a.apiKey);
      const redeliver = await h.request({ method: 'POST', url: '/api/v1/webhooks/redeliver.php', key: b.apiKey, body: { delivery_id: mine.id } });
      assert.equal(redeliver.status, 422);
    });

    it('retries a 500 after about 5 s with the same webhook-id, on the injected clock', async () => {
      const { apiKey } = await h.account();
      let calls = 0;
      rx.respond = (r) => (r.path === '/flaky' && calls++ === 0 ? { status: 500, body: 'boom' } : { status: 200 });
      try {
        await subscribe(h, apiKey, rx.url('/flaky'), ['*']);
        await createLead(h, apiKey);
        await drain();
        assert.equal(at('/flaky').length, 1);
        let [d] = await deliveries(h, apiKey);
        assert.equal(d.status, 'pending');
        assert.equal(d.last_status_code, 500);
        const delay = d.next_attempt_at - h.clock.now();
        assert.ok(delay >= 4_000 && delay <= 6_000, `delay ${delay}`);
        assert.equal(d.attempts[0].response_excerpt, 'boom');
        await drain();
        assert.equal(at('/flaky').length, 1, 'not before it is due');
        h.clock.advance(6_001);
        await drain();
        const [first, second] = at('/flaky');
        assert.equal(second?.headers['webhook-id'], first?.headers['webhook-id']);
        [d] = await deliveries(h, apiKey);
        assert.equal(d.status, 'delivered');
        assert.deepEqual(d.attempts.map((a: any) => a.status_code), [500, 200]);
        assert.deepEqual(d.attempts.map((a: any) => a.outcome), ['retrying', 'delivered']);
      } finally {
        rx.respond = () => ({ status: 200 });
      }
    });

    it('walks the whole retry schedule with jitter, then fails; honours Retry-After on 429', async () => {
      const { apiKey } = await h.account();
      rx.respond = (r) => (r.path === '/down500' ? { status: 503 } : r.path === '/busy' ? { status: 429, headers: { 'retry-after': '600' } } : { status: 200 });
      try {
        await subscribe(h, apiKey, rx.url('/down500'), ['lead.created']);
        await createLead(h, apiKey);
        const schedule = [5e3, 300e3, 1_800e3, 7_200e3, 18_000e3, 36_000e3, 36_000e3];
        await drain();
        for (const base of schedule) {
          const [d] = await deliveries(h, apiKey);
          assert.equal(d.status, 'pending');
          const delay = d.next_attempt_at - h.clock.now();
          assert.ok(delay >= base * 0.8 - 1 && delay <= base * 1.2 + 1, `delay ${delay} for ${base}`);
          h.clock.set(d.next_attempt_at);
          await drain();
        }
        const [d] = await deliveries(h, apiKey);
        assert.equal(d.status, 'failed');
        assert.equal(d.attempt_count, 8);
        assert.equal(d.attempts.at(-1).outcome, 'exhausted');
        assert.equal(d.next_attempt_at, null);
        assert.equal(at('/down500').length, 8);

        await subscribe(h, apiKey, rx.url('/busy'), ['ticket.created']);
        await h.request({ method: 'POST', url: '/api/v1/tickets/create.php', key: apiKey, body: { subject: 's', description: 'd' } });
        await drain();
        const [busy] = await deliveries(h, apiKey, '?event=ticket.created');
        assert.equal(busy.last_status_code, 429);
        assert.ok(busy.next_attempt_at - h.clock.now() >= 600_000, 'waits at least Retry-After');
      } finally {
        rx.respond = () => ({ status: 200 });
      }
    });

    it('disables a webhook that has failed continuously for 5 days', async () => {
      const { apiKey } = await h.account();
      rx.respond = (r) => (r.path === '/dying' ? { status: 500 } : { status: 200 });
      try {
        const hook = await subscribe(h, apiKey, rx.url('/dying'), ['*']);
        await createLead(h, apiKey);
        await drain();
        h.clock.advance(5 * 86_400_000);
        await createLead(h, apiKey);
        await drain();
        const listed = await h.request({ method: 'GET', url: '/api/v1/webhooks/list.php', key: apiKey });
        const row = listed.json.webhooks.find((w: any) => w.id === hook.id);
        assert.equal(row.status, 'disabled');
        assert.equal(row.disabled_reason, 'failing');
        const pending = await deliveries(h, apiKey, '?status=pending');
        assert.equal(pending.length, 0, 'its retries are cancelled');
      } finally {
        rx.respond = () => ({ status: 200 });
      }
    });

    it('records a timeout for a receiver that hangs, and a network error for one that is down', async () => {
      const { apiKey } = await h.account();
      rx.respond = (r) => (r.path === '/hang' ? 'hang' : { status: 200 });
      const dead = await Receiver.start();
      const deadUrl = dead.url('/dead');
      await dead.close();
      try {
        await subscribe(h, apiKey, rx.url('/hang'), ['lead.created']);
        await subscribe(h, apiKey, deadUrl, ['lead.created']);
        await createLead(h, apiKey);
        await drain();
        const log = await deliveries(h, apiKey);
        const hung = log.find((d) => d.url === rx.url('/hang'));
        const down = log.find((d) => d.url === deadUrl);
        assert.equal(hung.status, 'pending');
        assert.match(hung.last_error, /within 800 ms/);
        assert.ok(hung.last_latency_ms >= 700, `${hung.last_latency_ms}`);
        assert.equal(down.status, 'pending');
        assert.match(down.last_error, /ECONNREFUSED/);
        assert.equal(down.last_status_code, null);
      } finally {
        rx.respond = () => ({ status: 200 });
      }
    });

    it('follows no redirect and caps what it reads of a response', async () => {
      const { apiKey } = await h.account();
      rx.respond = (r) =>
        r.path === '/redirect' ? { status: 302, headers: { location: rx.url('/target') } } : r.path === '/big' ? { status: 200, body: 'x'.repeat(2_000_000) } : { status: 200 };
      try {
        await subscribe(h, apiKey, rx.url('/redirect'), ['lead.created']);
        await subscribe(h, apiKey, rx.url('/big'), ['lead.created']);
        await createLead(h, apiKey);
        await drain();
        assert.equal(at('/target').length, 0);
        const log = await deliveries(h, apiKey);
        const redirected = log.find((d) => d.url.endsWith('/redirect'));
        assert.equal(redirected.status, 'pending');
        assert.match(redirected.last_error, /redirects are not followed/);
        const big = log.find((d) => d.url.endsWith('/big'));
        assert.equal(big.status, 'delivered');
        assert.equal(big.attempts[0].response_excerpt.length, 1024);
      } finally {
        rx.respond = () => ({ status: 200 });
      }
    });

    it('redelivers on request with the same webhook-id, and filters the log', async () => {
      const { apiKey } = await h.account();
      const hook = await subscribe(h, apiKey, rx.url('/again'), ['*']);
      await createLead(h, apiKey);
      await drain();
      const [d] = await deliveries(h, apiKey, `?webhook_id=${hook.id}&status=delivered&event=lead.created`);
      assert.ok(d);
      const res = await h.request({ method: 'POST', url: '/api/v1/webhooks/redeliver.php', key: apiKey, body: { delivery_id: d.id } });
      assert.equal(res.status, 202, res.raw);
      assert.equal(res.json.status, 'pending');
      await drain();
      const [first, second] = at('/again');
      assert.ok(second);
      assert.equal(second.headers['webhook-id'], first?.headers['webhook-id']);
      const [after] = await deliveries(h, apiKey, `?webhook_id=${hook.id}`);
      assert.equal(after.status, 'delivered');
      assert.equal(after.attempt_count, 2);
      assert.equal((await deliveries(h, apiKey, '?status=failed')).length, 0);
      assert.equal((await deliveries(h, apiKey, '?event=ticket.created')).length, 0);
      const missing = await h.request({ method: 'POST', url: '/api/v1/webhooks/redeliver.php', key: apiKey, body: { delivery_id: 'dlv_00000000000000000000000000000000' } });
      assert.equal(missing.status, 422);
    });

    it('sends a test event to one webhook alone, whatever it listens to, signed and logged with its data and the answer', async () => {
      const { apiKey } = await h.account();
      const hook = await subscribe(h, apiKey, rx.url('/test-me'), ['ticket.created']);
      await subscribe(h, apiKey, rx.url('/everything'), ['*']);
      const res = await h.request({ method: 'POST', url: '/api/v1/webhooks/test.php', key: apiKey, body: { id: hook.id } });
      assert.equal(res.status, 202, res.raw);
      assert.equal(res.json.event, 'webhook.test');
      assert.equal(res.json.webhook_id, hook.id);
      assert.equal(res.json.data.webhook_id, hook.id);
      await drain();
      const [got] = at('/test-me');
      assert.ok(got, 'delivered');
      assert.equal(got.json.event, 'webhook.test');
      assert.equal(verifyWebhook(got.raw, got.headers, hook.secret, { nowMs: h.clock.now() }).event, 'webhook.test');
      assert.equal(at('/everything').length, 0, 'no other webhook gets it, not even "*"');
      // The log: the payload's data, the receiver's status and what it answered.
      const [logged] = await deliveries(h, apiKey, `?event=webhook.test`);
      assert.equal(logged.status, 'delivered');
      assert.deepEqual(logged.data, res.json.data);
      assert.equal(logged.attempts[0].status_code, 200);
      assert.ok('response_excerpt' in logged.attempts[0], 'what the receiver answered (its first 1 KB) is logged');
      // Another account's webhook, a malformed id: refused, nothing sent.
      const other = await h.account();
      const foreign = await h.request({ method: 'POST', url: '/api/v1/webhooks/test.php', key: other.apiKey, body: { id: hook.id } });
      assert.equal(foreign.status, 422, foreign.raw);
      const unknown = await h.request({ method: 'POST', url: '/api/v1/webhooks/test.php', key: apiKey, body: { id: 'nope' } });
      assert.equal(unknown.status, 422, unknown.raw);
      const bad = await h.request({ method: 'POST', url: '/api/v1/webhooks/test.php', key: apiKey, body: { id: hook.id, extra: 1 } });
      assert.equal(bad.status, 400, bad.raw);
      await drain();
      assert.equal(at('/test-me').length, 1);
    });
  });
}
