import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, fakeProviders, startMediaServer } from './helpers.ts';

for (const kind of STORES) {
  describe(`a call's lease on ${kind.name}`, { skip: kind.skip }, () => {
    let s: MediaServer;
    before(async () => {
      s = await startMediaServer(kind.name, { providers: fakeProviders([]) });
    });
    after(() => s.close());

    it('is renewed while the call runs; lost to another server, the call stops here error_server_lost', async () => {
      const agent = await s.flowAgent({ start_node_id: 'n', nodes: [{ id: 'n', type: 'conversation', instruction: { type: 'static_text', text: 'Hello there.' } }] });
      const client = await s.call(agent);
      await client.waitFor('agent_stop_talking', 5_000);
      const db = s.runtime.store.db;
      const lease = () => db.selectFrom('call_leases').selectAll().where('call_id', '=', client.callId).executeTakeFirst();
      assert.equal((await lease())?.server_id, s.runtime.serverId);

      await s.runtime.media.sessions.renewLeases();
      assert.equal(s.runtime.media.sessions.size, 1, 'a held lease keeps its call');

      // Another server claims the lapsed lease (as if this process had stalled past it).
      await db.updateTable('call_leases').set({ server_id: 'srv_other' }).where('call_id', '=', client.callId).execute();
      await s.runtime.media.sessions.renewLeases();
      const end = await client.ended;
      assert.equal(end.disconnection_reason, 'error_server_lost');
      assert.equal(end.call_status, 'error');
      assert.deepEqual((await s.eventKinds()).filter((k) => k === 'call.finished'), ['call.finished']);
    });

    it("a lost server's call is ended with the flow's path from its checkpoint (issue 27)", async () => {
      const agent = await s.flowAgent({
        start_node_id: 'greet',
        nodes: [
          { id: 'greet', name: 'Greeting', type: 'conversation', edges: [{ id: 'e', destination_node_id: 'book', transition_condition: { type: 'always' } }] },
          { id: 'book', type: 'conversation' },
        ],
      });
      const created = await s.api('POST', '/v2/create-web-call', { agent_id: agent });
      const callId = created.json.call_id as string;
      const db = s.runtime.store.db;
      await db.updateTable('calls').set({ call_status: 'ongoing', start_timestamp: Date.now() - 5_000 }).where('call_id', '=', callId).execute();
      const checkpoint = {
        transcript_object: [{ role: 'user', content: 'a table for two', start_ms: 1_000, end_ms: 2_000, cut_off: false }],
        current_node_id: 'book', current_state: null, reached_end: false, names: [],
        node_transitions: [{ from: 'greet', to: 'book', atMs: 2_500, fromName: 'Greeting' }],
      };
      await db.insertInto('call_leases').values({ call_id: callId, server_id: 'srv_dead', expires_at: 0, checkpoint: JSON.stringify(checkpoint) }).execute();
      assert.equal(await s.runtime.media.sessions.recoverLapsed(), 1);
      const call = (await s.api('GET', `/v2/get-call/${callId}`)).json;
      assert.equal(call.disconnection_reason, 'error_server_lost');
      assert.equal(call.current_node_id, 'book');
      assert.deepEqual(call.transcript_with_tool_calls, [
        { role: 'user', content: 'a table for two' },
        { role: 'node_transition', former_node_id: 'greet', former_node_name: 'Greeting', new_node_id: 'book', time_sec: 2.5 },
      ]);
    });
  });
}
