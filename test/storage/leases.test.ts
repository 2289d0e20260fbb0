import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { CallCheckpoint } from '../../src/domain/call-checkpoint.ts';
import { createSilentLogger } from '../../src/lib/logger.ts';
import { type Runtime, createRuntime } from '../../src/runtime.ts';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

const TTL_MS = 1_000;

const CHECKPOINT: CallCheckpoint = {
  transcript_object: [
    { role: 'agent', content: 'Hello, thanks for calling Acme. How can I help?', start_ms: 0, end_ms: 2_000, cut_off: false },
    { role: 'user', content: 'I would like an appointment', start_ms: 2_500, end_ms: 4_000, cut_off: false },
  ],
  current_node_id: 'book',
  current_state: null,
  reached_end: false,
  names: [],
};

for (const kind of STORES) {
  describe(`call leases (${kind.name})`, { skip: kind.skip }, () => {
    let h: Harness;
    const others: Runtime[] = [];
    before(async () => {
      h = await startHarness(kind.name, { CALL_LEASE_TTL_MS: String(TTL_MS), WEBHOOK_WORKER: 'false' });
      // Two more servers on the same store, with their own server ids.
      for (let i = 0; i < 2; i++) others.push(await createRuntime(h.config, { logger: createSilentLogger(), clock: h.clock, store: h.testStore.store }));
    });
    after(async () => {
      for (const runtime of others) await runtime.close();
      await h.close();
    });

    async function joinedCall(): Promise<string> {
      const { apiKey } = await h.account();
      const { agentId } = await createFlowAgent(h, apiKey);
      const created = await h.request({ method: 'POST', url: '/v2/create-web-call', key: apiKey, body: { agent_id: agentId } });
      assert.equal(created.status, 201, created.raw);
      await h.runtime.services.lifecycle.joinCall(created.json.access_token);
      return created.json.call_id as string;
    }
    const finishedEvents = async (callId: string) =>
      (await h.runtime.store.db.selectFrom('webhook_events').select('data').where('kind', '=', 'call.finished').execute()).filter((e) => e.data.includes(callId)).length;

    it('a join leases the call to its server; only the holder checkpoints it; the end removes the lease', async () => {
      const callId = await joinedCall();
      const lease = await h.runtime.store.db.selectFrom('call_leases').selectAll().where('call_id', '=', callId).executeTakeFirstOrThrow();
      assert.equal(lease.server_id, h.runtime.serverId);
      assert.equal(lease.expires_at, h.clock.now() + TTL_MS);
      assert.equal(await others[0]!.services.lifecycle.checkpointCall(callId, CHECKPOINT), false, 'another server cannot write it');
      assert.equal(await h.runtime.services.lifecycle.checkpointCall(callId, CHECKPOINT), true);
      assert.equal(await h.runtime.services.lifecycle.finishCall(callId, { reason: 'user_hangup' }), true);
      assert.equal(await h.runtime.store.db.selectFrom('call_leases').select('call_id').where('call_id', '=', callId).executeTakeFirst(), undefined);
    });

    it('a renewed lease holds; a lapsed one is taken over by one of two racing servers, which ends the call from its checkpoint once', async () => {
      const callId = await joinedCall();
      await h.runtime.services.lifecycle.checkpointCall(callId, CHECKPOINT);
      if (kind.name === 'postgres') {
        h.clock.advance(TTL_MS - 200);
        await h.runtime.services.lifecycle.renewLeases([callId]);
        h.clock.advance(TTL_MS - 200);
        assert.deepEqual(await Promise.all(others.map((r) => r.media.sessions.recoverLapsed())), [0, 0], 'a renewed lease has not lapsed');
        h.clock.advance(400);
      }
      // (SQLite: one server at a time, so a lease held by another server id has lapsed already.)
      const ended = await Promise.all(others.map((r) => r.media.sessions.recoverLapsed()));
      assert.equal(ended[0]! + ended[1]!, 1, `one server ended it (${ended.join(', ')})`);
      const row = await h.runtime.services.calls.readCall(callId);
      assert.equal(row?.call_status, 'error');
      assert.equal(row?.disconnection_reason, 'error_server_lost');
      assert.equal(row?.transcript, 'Agent: Hello, thanks for calling Acme. How can I help?\nUser: I would like an appointment');
      assert.deepEqual(row?.transcript_object, CHECKPOINT.transcript_object);
      assert.equal(row?.current_node_id, 'book');
      assert.equal(row?.call_analysis?.call_successful, false);
      assert.equal(await finishedEvents(callId), 1);
      const counted = await Promise.all(others.map(async (r) => /switchboard_calls_recovered_total (\d+)/.exec(await r.metrics.registry.metrics())?.[1]));
      assert.deepEqual(counted.map(Number).sort(), [0, 1], 'counted by the server that ended it');
      assert.deepEqual(await Promise.all(others.map((r) => r.media.sessions.recoverLapsed())), [0, 0], 'nothing is left to end');
      assert.equal(await h.runtime.services.lifecycle.finishCall(callId, { reason: 'user_hangup' }), false, 'its old holder cannot end it again');
      assert.equal(await finishedEvents(callId), 1);
    });
  });
}
