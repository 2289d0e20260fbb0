/**
 * Retell SDK 5's `call.list` filters (issue 26, item 6) through the real `retell-sdk` against a
 * listening server, on both stores: `agent: [{agent_id, version?}]`, the enum filters
 * (`{op: "in", type: "enum", value}`), the boolean filter, number and range filters on
 * `start_timestamp`, `end_timestamp` and `duration_ms`, the old shapes beside them, and a 400
 * naming the field for a bad filter.
 */
import assert from 'node:assert/strict';
import type net from 'node:net';
import { after, before, describe, it } from 'node:test';
import Retell from 'retell-sdk';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

for (const kind of STORES) {
  describe(`retell-sdk call.list filters on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let retell: Retell;
    /** The calls, by name; `starts` their start timestamps. */
    const ids: Record<string, string> = {};
    const starts: Record<string, number> = {};
    let agentA = '';
    let agentB = '';

    before(async () => {
      h = await startHarness(kind.name);
      const { accountId, apiKey } = await h.account();
      await h.app.listen({ port: 0, host: '127.0.0.1' });
      retell = new Retell({ apiKey, baseURL: `http://127.0.0.1:${(h.app.server.address() as net.AddressInfo).port}`, maxRetries: 0 });
      agentA = (await createFlowAgent(h, apiKey)).agentId;
      agentB = (await createFlowAgent(h, apiKey)).agentId;
      const lifecycle = h.runtime.services.lifecycle;

      // web: agent A version 1, 3 s, the caller hung up, successful.
      h.clock.advance(1000);
      const web = await h.request({ method: 'POST', url: '/v2/create-web-call', key: apiKey, body: { agent_id: agentA } });
      ids.web = web.json.call_id;
      starts.web = (await lifecycle.joinCall(web.json.access_token)).call.start_timestamp!;
      h.clock.advance(3000);
      await lifecycle.finishCall(ids.web!, { reason: 'user_hangup', callAnalysis: { call_summary: 'Fine.', call_successful: true, user_sentiment: 'Positive' } });

      // inbound: agent A version 2, a phone call of 60 s that the agent ended.
      assert.equal((await h.request({ method: 'PATCH', url: `/update-agent/${agentA}`, key: apiKey, body: { agent_name: 'Second' } })).status, 200);
      h.clock.advance(1000);
      const phone = (direction: 'inbound' | 'outbound', n: number) => ({
        from_number: '+14155550100',
        to_number: `+1415555010${n}`,
        direction,
        telephony_identifier: `carrier-${n}`,
      });
      const inbound = await lifecycle.admitCall({ accountId, concurrencyLimit: null, callType: 'phone_call', agent_id: agentA, phone: phone('inbound', 1) });
      ids.inbound = inbound.call.call_id;
      starts.inbound = inbound.call.start_timestamp!;
      h.clock.advance(60_000);
      await lifecycle.finishCall(ids.inbound, { reason: 'agent_hangup' });

      // outbound: agent B, ringing (registered); plain: agent B, a web call not joined.
      h.clock.advance(1000);
      ids.outbound = (await lifecycle.registerCall({ accountId, concurrencyLimit: null, callType: 'phone_call', agent_id: agentB, phone: phone('outbound', 2) }, 30_000)).call_id;
      h.clock.advance(1000);
      ids.plain = (await h.request({ method: 'POST', url: '/v2/create-web-call', key: apiKey, body: { agent_id: agentB } })).json.call_id;
    });
    after(() => h?.close());

    const list = async (filter_criteria: Record<string, unknown>) => {
      const page = await retell.call.list({ filter_criteria, sort_order: 'ascending' } as never);
      const names = Object.fromEntries(Object.entries(ids).map(([name, id]) => [id, name]));
      return page.items.map((call) => names[call.call_id] ?? call.call_id);
    };
    const refused = async (filter_criteria: Record<string, unknown>, field: RegExp) =>
      assert.rejects(retell.call.list({ filter_criteria }), (error: unknown) => error instanceof Retell.BadRequestError && field.test(error.message));

    it('filters by agent, and by agent and version, agents ORed', async () => {
      assert.deepEqual(await list({ agent: [{ agent_id: agentA }] }), ['web', 'inbound']);
      assert.deepEqual(await list({ agent: [{ agent_id: agentA, version: [2] }] }), ['inbound']);
      assert.deepEqual(await list({ agent: [{ agent_id: agentA, version: [] }] }), ['web', 'inbound'], 'an empty version list is every version');
      assert.deepEqual(await list({ agent: [{ agent_id: agentA, version: [1] }, { agent_id: agentB }] }), ['web', 'outbound', 'plain']);
      assert.deepEqual(await list({ agent_id: [agentB] }), ['outbound', 'plain'], 'the old form');
      assert.deepEqual(await list({ agent_id: [agentB], agent: [{ agent_id: agentA }] }), [], 'conditions are ANDed');
    });

    it('filters by the enum filters and the boolean filter', async () => {
      const anyOf = (value: string[]) => ({ op: 'in', type: 'enum', value });
      assert.deepEqual(await list({ call_status: anyOf(['registered']) }), ['outbound', 'plain']);
      assert.deepEqual(await list({ call_status: anyOf(['ended', 'error']) }), ['web', 'inbound']);
      assert.deepEqual(await list({ call_status: ['ended'] }), ['web', 'inbound'], 'the old form');
      assert.deepEqual(await list({ call_type: anyOf(['phone_call']) }), ['inbound', 'outbound']);
      assert.deepEqual(await list({ call_type: anyOf(['web_call']) }), ['web', 'plain']);
      assert.deepEqual(await list({ direction: anyOf(['inbound']) }), ['inbound']);
      assert.deepEqual(await list({ direction: anyOf(['outbound']) }), ['outbound']);
      assert.deepEqual(await list({ disconnection_reason: anyOf(['agent_hangup']) }), ['inbound']);
      assert.deepEqual(await list({ call_successful: { op: 'eq', type: 'boolean', value: true } }), ['web']);
      assert.deepEqual(await list({ call_successful: { op: 'eq', type: 'boolean', value: false } }), []);
      assert.deepEqual(await list({ call_type: anyOf(['phone_call']), call_status: anyOf(['registered']) }), ['outbound']);
    });

    it('filters by number and range filters, and by the old thresholds', async () => {
      assert.deepEqual(await list({ duration_ms: { op: 'bt', type: 'range', value: [1000, 10_000] } }), ['web']);
      assert.deepEqual(await list({ duration_ms: { op: 'gt', type: 'number', value: 3000 } }), ['inbound']);
      assert.deepEqual(await list({ duration_ms: { op: 'ge', type: 'number', value: 3000 } }), ['web', 'inbound']);
      assert.deepEqual(await list({ duration_ms: { op: 'eq', type: 'number', value: 3000 } }), ['web']);
      assert.deepEqual(await list({ duration_ms: { op: 'ne', type: 'number', value: 3000 } }), ['inbound'], 'a call without a duration matches no condition');
      assert.deepEqual(await list({ duration_ms: { lower_threshold: 50_000 } }), ['inbound']);
      assert.deepEqual(await list({ start_timestamp: { op: 'bt', type: 'range', value: [starts.inbound, starts.inbound] } }), ['inbound'], 'both bounds included');
      assert.deepEqual(await list({ start_timestamp: { op: 'lt', type: 'number', value: starts.inbound } }), ['web']);
      assert.deepEqual(await list({ start_timestamp: { lower_threshold: starts.web, upper_threshold: starts.web } }), ['web'], 'the old form');
      assert.deepEqual(await list({ end_timestamp: { op: 'le', type: 'number', value: starts.web! + 3000 } }), ['web']);
    });

    it('refuses a bad filter with a 400 naming the field', async () => {
      await refused({ duration_ms: { op: 'bt', type: 'range', value: [10_000, 1000] } }, /filter_criteria\.duration_ms: a range's value is \[lower, upper\]/);
      await refused({ duration_ms: { op: 'bt', type: 'range', value: [1000] } }, /filter_criteria\/duration_ms\/value/);
      await refused({ call_status: { op: 'in', type: 'enum', value: ['not_connected'] } }, /filter_criteria\/call_status\/value\/0/);
      await refused({ direction: { op: 'eq', type: 'enum', value: ['inbound'] } }, /filter_criteria\/direction/);
      await refused({ start_timestamp: { op: 'gt', type: 'number', value: -1 } }, /filter_criteria\/start_timestamp\/value/);
      await refused({ metadata: [{ key: 'order', op: 'eq', type: 'string', value: '42' }] }, /filter_criteria has an unknown field: metadata/);
    });
  });
}
