// Retell's agent-level webhooks (issue 26): an agent with `webhook_events` gets exactly those events
// at its webhook_url in Retell's body shape, and Retell's own SDK (`Retell.verify`, npm retell-sdk)
// accepts their `x-retell-signature` with the account's agent-webhook secret. Without
// `webhook_events` the agent's URL gets `call.finished` as before; subscriptions never see Retell's events.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Retell from 'retell-sdk';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { deliveries, drainDeliveries, expectedSignatures, subscribe } from './helpers.ts';
import { Receiver } from './receiver.ts';

const ENV = { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32', WEBHOOK_TIMEOUT_MS: '800', WEBHOOK_CONNECT_TIMEOUT_MS: '400' };

for (const kind of STORES) {
  describe(`Retell's agent webhooks on ${kind.name}`, { skip: kind.skip }, () => {
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
    const at = (path: string, callId: string) => rx.received.filter((r) => r.path === path && (r.json.call ?? r.json.data)?.call_id === callId);

    /** A web call on the agent, joined and ended by the caller. */
    async function callOn(apiKey: string, agentId: string, body: Record<string, unknown> = {}): Promise<string> {
      const created = await h.request({ method: 'POST', url: '/v2/create-web-call', key: apiKey, body: { agent_id: agentId, ...body } });
      assert.equal(created.status, 201, created.raw);
      await h.runtime.services.lifecycle.joinCall(created.json.access_token);
      h.clock.advance(5_000);
      assert.ok(await h.runtime.services.lifecycle.finishCall(created.json.call_id, { reason: 'user_hangup', transcript: 'Agent: Hello.\n' }));
      await drain();
      return created.json.call_id;
    }

    it('sends the events webhook_events lists, in Retell\'s shape, which Retell.verify accepts with the agent secret', async () => {
      const { apiKey } = await h.account();
      const sub = await subscribe(h, apiKey, rx.url('/subscription'), ['*']);
      const { agentId } = await createFlowAgent(h, apiKey, { webhook_url: rx.url('/retell'), webhook_events: ['call_started', 'call_ended', 'call_analyzed'] });
      const callId = await callOn(apiKey, agentId);

      const got = at('/retell', callId);
      // Deliveries run concurrently: no order between them is promised (docs/webhooks.md).
      assert.deepEqual(got.map((r) => r.json.event).sort(), ['call_analyzed', 'call_ended', 'call_started'], 'exactly the listed events, once each');
      for (const r of got) assert.deepEqual(Object.keys(r.json), ['event', 'call']);
      const event = (name: string) => got.find((r) => r.json.event === name)?.json.call;
      assert.equal(event('call_started').call_status, 'ongoing');
      assert.deepEqual([event('call_ended').call_status, event('call_ended').disconnection_reason], ['ended', 'user_hangup']);

      const secret = (await h.request({ method: 'GET', url: '/api/v1/webhooks/agent-secret.php', key: apiKey })).json.secret as string;
      for (const r of got) {
        const signature = r.headers['x-retell-signature'] as string;
        assert.match(signature, /^v=\d+,d=[0-9a-f]{64}$/);
        assert.equal(await Retell.verify(r.raw.toString('utf8'), secret, signature), true, `${r.json.event}: Retell's SDK accepts it`);
        assert.equal(JSON.stringify(r.json), r.raw.toString('utf8'), "compact JSON: Retell's demos verify JSON.stringify(req.body)");
        assert.equal(await Retell.verify(`${r.raw.toString('utf8')} `, secret, signature), false, 'and refuses other bytes');
        assert.equal(await Retell.verify(r.raw.toString('utf8'), sub.secret, signature), false, 'and another key');
        // Our own signatures stay beside it.
        const ours = expectedSignatures(secret, r.raw, r.headers['webhook-id'] as string, r.headers['webhook-timestamp'] as string);
        assert.deepEqual([r.headers['x-service-signature'], r.headers['webhook-signature']], [ours.service, ours.standard]);
      }

      // Subscriptions keep call.finished, and never get Retell's events.
      assert.deepEqual(at('/subscription', callId).map((r) => r.json.event), ['call.finished']);
      const log = await deliveries(h, apiKey, '?event=call_ended');
      assert.deepEqual(log.map((d: any) => [d.event, d.url, d.status]), [['call_ended', rx.url('/retell'), 'delivered']]);
    });

    it('sends only the events listed, and call.finished when webhook_events is not set', async () => {
      const { apiKey } = await h.account();
      const { agentId } = await createFlowAgent(h, apiKey, { webhook_url: rx.url('/ended-only'), webhook_events: ['call_ended'] });
      const endedOnly = await callOn(apiKey, agentId);
      assert.deepEqual(at('/ended-only', endedOnly).map((r) => r.json.event), ['call_ended']);

      const plain = await createFlowAgent(h, apiKey, { webhook_url: rx.url('/ours') });
      const ours = await callOn(apiKey, plain.agentId);
      const got = at('/ours', ours);
      assert.deepEqual(got.map((r) => r.json.event), ['call.finished']);
      assert.equal(got[0]?.headers['x-retell-signature'], undefined);

      // A call's agent_override can ask for them too.
      const overridden = await callOn(apiKey, plain.agentId, { agent_override: { agent: { webhook_url: rx.url('/override'), webhook_events: ['call_started'] } } });
      assert.deepEqual(at('/override', overridden).map((r) => r.json.event), ['call_started']);
    });

    it('takes webhook_events on agents and answers them; refuses unknown or repeated names (400, naming the field)', async () => {
      const { apiKey } = await h.account();
      const engine = { type: 'custom_llm', llm_websocket_url: 'ws://127.0.0.1:9/llm' };
      const ok = await h.request({ method: 'POST', url: '/create-agent', key: apiKey, body: { response_engine: engine, webhook_events: ['call_ended', 'call_analyzed'] } });
      assert.equal(ok.status, 201, ok.raw);
      assert.deepEqual(ok.json.webhook_events, ['call_ended', 'call_analyzed']);
      const cleared = await h.request({ method: 'PATCH', url: `/update-agent/${ok.json.agent_id}`, key: apiKey, body: { webhook_events: null } });
      assert.equal(cleared.json.webhook_events, null);
      for (const webhook_events of [['call.finished'], ['call_ended', 'call_ended'], 'call_ended']) {
        const flow = await h.request({ method: 'POST', url: '/create-agent', key: apiKey, body: { response_engine: engine, webhook_events } });
        assert.equal(flow.status, 400, JSON.stringify(webhook_events));
        assert.match(flow.raw, /webhook_events/);
      }
    });
  });
}
