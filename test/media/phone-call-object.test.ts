// Issue 24: the call object of a phone call (call_type, numbers, direction, the carrier's id),
// admitted by a transport with the phone fields; the far party's number is PII under the storage
// policies, and call.finished carries what the call object keeps.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import type { LoopbackTransport } from '../../src/media/loopback/loopback.transport.ts';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, eventually, fakeProviders, startMediaServer } from './helpers.ts';

const HELLO = { start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello there.' } }] };

for (const kind of STORES) {
  describe(`a phone call's object (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    before(async () => {
      s = await startMediaServer(kind.name, { providers: fakeProviders([], { msPerChar: 1 }) });
    });
    after(() => s.close());

    const run = async (policy: string, direction: 'inbound' | 'outbound') => {
      const agentId = await s.flowAgent(HELLO, { data_storage_setting: policy });
      const phone = { from_number: '+14155550100', to_number: '+14155550199', direction, telephony_identifier: `abc-${policy}-${direction}@10.0.0.1` };
      const { endpoint, session } = await (s.app.transports.get('loopback') as LoopbackTransport).admit({ accountId: s.accountId, agent_id: agentId, callType: 'phone_call', concurrencyLimit: null, phone });
      const live = (await s.api('GET', `/v2/get-call/${session.callId}`)).json;
      endpoint.hangup();
      await endpoint.ended;
      const ended = (await s.api('GET', `/v2/get-call/${session.callId}`)).json;
      const finished = await eventually(async () => {
        const events = await sql<{ data: string }>`select data from webhook_events where kind = 'call.finished'`.execute(s.runtime.store.db);
        return events.rows.map((r) => JSON.parse(r.data)).find((d) => (d.call ?? d).call_id === session.callId);
      });
      return { live, ended, finished };
    };

    it('carries call_type phone_call, the numbers, the direction and the carrier id; call.finished too', async () => {
      const { live, ended, finished } = await run('everything', 'inbound');
      assert.equal(live.call_type, 'phone_call');
      assert.deepEqual(
        { from: ended.from_number, to: ended.to_number, direction: ended.direction, id: ended.telephony_identifier, transfer: ended.transfer_destination },
        { from: '+14155550100', to: '+14155550199', direction: 'inbound', id: 'abc-everything-inbound@10.0.0.1', transfer: null },
      );
      assert.ok(finished, 'call.finished recorded');
      const call = finished.call ?? finished;
      assert.equal(call.from_number, '+14155550100');
      assert.equal(call.direction, 'inbound');
    });

    it("drops the far party's number under everything_except_pii and basic_attributes_only", async () => {
      const inbound = await run('everything_except_pii', 'inbound');
      assert.equal(inbound.live.from_number, '+14155550100', 'kept while the call runs');
      assert.equal(inbound.ended.from_number, null, "the caller's number is PII");
      assert.equal(inbound.ended.to_number, '+14155550199', "the account's own number stays");
      assert.equal((inbound.finished.call ?? inbound.finished).from_number, null);
      const outbound = await run('basic_attributes_only', 'outbound');
      assert.equal(outbound.ended.to_number, null, "the callee's number is PII");
      assert.equal(outbound.ended.from_number, '+14155550100');
    });

    it('web calls have no phone fields', async () => {
      const agentId = await s.flowAgent(HELLO);
      const created = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
      assert.equal(created.json.call_type, 'web_call');
      for (const field of ['from_number', 'to_number', 'direction', 'telephony_identifier']) assert.ok(!(field in created.json), field);
    });
  });
}
