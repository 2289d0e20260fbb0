// An agent's `webhook_timeout_ms` (Retell's field, issue 26) is the attempt timeout of the
// deliveries to its webhook_url, capped at the server's WEBHOOK_TIMEOUT_MS; subscriptions and
// agents without it keep the server's timeout.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { deliveries, drainDeliveries } from './helpers.ts';
import { Receiver } from './receiver.ts';

const ENV = { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_TIMEOUT_MS: '4000', WEBHOOK_CONNECT_TIMEOUT_MS: '400' };

for (const kind of STORES) {
  describe(`an agent's webhook_timeout_ms on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let rx: Receiver;
    before(async () => {
      h = await startHarness(kind.name, ENV);
      rx = await Receiver.start();
      // Every answer takes 1.5 s: within the server's 4 s, past an agent's 1 s.
      rx.respond = () => ({ status: 200, body: 'ok', delayMs: 1_500 });
    });
    after(async () => {
      await rx.close();
      await h.close();
    });

    async function callOn(apiKey: string, agentId: string, body: Record<string, unknown> = {}): Promise<void> {
      const created = await h.request({ method: 'POST', url: '/v2/create-web-call', key: apiKey, body: { agent_id: agentId, ...body } });
      assert.equal(created.status, 201, created.raw);
      await h.runtime.services.lifecycle.joinCall(created.json.access_token);
      h.clock.advance(5_000);
      assert.ok(await h.runtime.services.lifecycle.finishCall(created.json.call_id, { reason: 'user_hangup', transcript: 'Agent: Hello.\n' }));
      await drainDeliveries(h.runtime.services.webhookPump);
    }

    it("times an agent's deliveries out at its webhook_timeout_ms; others wait the server's timeout", async () => {
      const { apiKey } = await h.account();
      const quick = await createFlowAgent(h, apiKey, { webhook_url: rx.url('/quick'), webhook_timeout_ms: 1_000 });
      const patient = await createFlowAgent(h, apiKey, { webhook_url: rx.url('/patient') });
      await callOn(apiKey, quick.agentId);
      await callOn(apiKey, patient.agentId);
      // A call's override sets it too.
      await callOn(apiKey, patient.agentId, { agent_override: { agent: { webhook_url: rx.url('/override'), webhook_timeout_ms: 1_000 } } });
      const log = await deliveries(h, apiKey);
      const of = (path: string) => log.find((d: any) => d.url === rx.url(path));
      assert.equal(of('/patient')?.status, 'delivered');
      for (const path of ['/quick', '/override']) {
        const d = of(path);
        assert.notEqual(d?.status, 'delivered', `${path}: ${JSON.stringify(d)}`);
        assert.match(JSON.stringify(d), /within 1000 ms/, path);
      }
    });
  });
}
