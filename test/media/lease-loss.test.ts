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
  });
}
