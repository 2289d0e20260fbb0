// The loopback transport: a call carried in-process, on the same endpoint port as the web call's
// WebSocket (src/media/endpoint.ts). A web call joins with its access token; any other call is
// admitted directly, with its own call_type. The code holding the endpoint is the caller: it
// reads the session's neutral events and the agent's audio, speaks, and hangs up.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isAppError } from '../../src/domain/errors.ts';
import type { CallEvent } from '../../src/media/endpoint.ts';
import { CallRefused } from '../../src/media/session-registry.ts';
import type { LoopbackTransport } from '../../src/media/loopback/loopback.transport.ts';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, concat, fakeProviders, silence, startMediaServer, tone } from './helpers.ts';

const FLOW = {
  start_node_id: 'greet',
  nodes: [
    {
      id: 'greet', type: 'conversation', instruction: { type: 'static_text', text: 'Hello, sales or support?' },
      edges: [{ id: 'e', destination_node_id: 'bye', transition_condition: { type: 'keyword', keywords: ['sales'] } }],
    },
    { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Sales it is. Goodbye.' } },
  ],
};

/** About 2.5 s of speech at 4 ms a character. */
const LONG = 'This is a long answer that goes on and on with many words in it for a good while longer than anyone waits '.repeat(6).trim();

const types = (events: readonly CallEvent[]) => events.map((e) => e.type);

for (const kind of STORES) {
  describe(`calls on the loopback transport (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    let loopback: LoopbackTransport;
    const providers = fakeProviders([], { msPerChar: 4 });
    before(async () => {
      s = await startMediaServer(kind.name, { providers });
      loopback = s.app.transports.get('loopback') as LoopbackTransport;
    });
    after(async () => {
      await s.close();
    });

    it('a web call joined with its access token runs from code: neutral events, the agent audio, a branch, the end', { timeout: 20_000 }, async () => {
      const agentId = await s.flowAgent(FLOW);
      const created = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
      providers.stt.push('i want sales');
      const { endpoint, session } = await loopback.join(created.json.access_token);
      assert.equal(session.callId, created.json.call_id);
      await endpoint.waitFor((e) => e.type === 'agent_done', 10_000);
      endpoint.play(concat(tone(600), silence(800)));
      const ending = await endpoint.ended;
      assert.deepEqual(ending, { reason: 'agent_hangup', status: 'ended' });
      const seen = types(endpoint.events);
      assert.equal(seen[0], 'started');
      assert.deepEqual(endpoint.events[0], { type: 'started', callId: created.json.call_id, agentId, agentVersion: 1, agentName: 'Media test' });
      for (const type of ['agent_talking', 'agent_done', 'transcript', 'node_changed'] as const) assert.ok(seen.includes(type), `${type} in ${seen.join(', ')}`);
      assert.deepEqual(endpoint.events.find((e) => e.type === 'node_changed'), { type: 'node_changed', from: 'greet', to: 'bye' });
      // Both replies' audio (4 ms a character): 45 characters, about 180 ms.
      assert.ok(endpoint.agentAudio().length >= 16 * 160, 'the agent audio reached the caller');
      const call = (await s.api('GET', `/v2/get-call/${created.json.call_id}`)).json;
      assert.equal(call.call_type, 'web_call');
      assert.equal(call.disconnection_reason, 'agent_hangup');
      assert.deepEqual(
        (call.transcript_object as Array<{ role: string; content: string }>).map((u) => `${u.role}: ${u.content}`),
        ['agent: Hello, sales or support?', 'user: i want sales', 'agent: Sales it is. Goodbye.'],
      );
      // The flow's path is kept on any transport, not only the WebSocket's (issue 27).
      assert.equal(call.current_node_id, 'bye');
      const moves = (call.transcript_with_tool_calls as Array<Record<string, unknown>>).filter((e) => e['role'] === 'node_transition');
      assert.deepEqual(moves.map((e) => [e['former_node_id'], e['new_node_id']]), [['greet', 'bye']]);
      // The token was redeemed on the loopback: it cannot join again on any transport.
      await assert.rejects(loopback.join(created.json.access_token), (e: unknown) => e instanceof CallRefused && e.reason === 'token_used');
    });

    it("a call admitted directly takes its call_type from the admission and ends like any other", { timeout: 20_000 }, async () => {
      const agentId = await s.flowAgent(FLOW);
      const { endpoint, session } = await loopback.admit({ accountId: s.accountId, agent_id: agentId, callType: 'phone_call', concurrencyLimit: null, metadata: { line: 'test' } });
      await endpoint.waitFor((e) => e.type === 'agent_done', 10_000);
      const ongoing = (await s.api('GET', `/v2/get-call/${session.callId}`)).json;
      assert.equal(ongoing.call_type, 'phone_call');
      assert.equal(ongoing.call_status, 'ongoing');
      assert.deepEqual(ongoing.metadata, { line: 'test' });
      endpoint.hangup();
      assert.deepEqual(await endpoint.ended, { reason: 'user_hangup', status: 'ended' });
      const ended = (await s.api('GET', `/v2/get-call/${session.callId}`)).json;
      assert.equal(ended.call_status, 'ended');
      assert.equal(ended.call_type, 'phone_call');
      assert.match(ended.transcript, /Hello, sales or support\?/);
      assert.ok((await s.eventKinds()).includes('call.finished'));
    });

    it('an admission is checked as create-web-call is: an unknown agent, a node the flow lacks, the concurrency limit', { timeout: 20_000 }, async () => {
      const agentId = await s.flowAgent(FLOW);
      const base = { accountId: s.accountId, callType: 'phone_call' as const, concurrencyLimit: null };
      await assert.rejects(loopback.admit({ ...base, agent_id: 'agent_missing' }), (e: unknown) => isAppError(e) && e.code === 'agent_not_found');
      await assert.rejects(loopback.admit({ ...base, agent_id: agentId, current_node_id: 'nowhere' }), (e: unknown) => isAppError(e) && e.code === 'invalid_request');
      const first = await loopback.admit({ ...base, agent_id: agentId, concurrencyLimit: 1 });
      await assert.rejects(loopback.admit({ ...base, agent_id: agentId, concurrencyLimit: 1 }), (e: unknown) => isAppError(e) && e.code === 'concurrency_limit_reached');
      first.endpoint.hangup();
      await first.endpoint.ended;
    });

    it('what the caller heard of a reply cut off comes from the played position the endpoint reports', { timeout: 20_000 }, async () => {
      const long = {
        start_node_id: 'talk',
        nodes: [{ id: 'talk', type: 'conversation', instruction: { type: 'static_text', text: LONG } }],
      };
      providers.stt.push('stop');
      const { endpoint, session } = await loopback.admit({ accountId: s.accountId, agent_id: await s.flowAgent(long), callType: 'web_call', concurrencyLimit: null });
      await endpoint.waitFor((e) => e.type === 'agent_talking', 10_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      endpoint.play(concat(tone(400), silence(800)));
      const cut = await endpoint.waitFor((e) => e.type === 'agent_done' && e.cutOff, 10_000);
      assert.equal(cut.type === 'agent_done' && cut.cutOff, true);
      const heardMs = endpoint.agentAudio().length / 16;
      endpoint.hangup();
      await endpoint.ended;
      const call = (await s.api('GET', `/v2/get-call/${session.callId}`)).json;
      const said = (call.transcript_object as Array<{ role: string; content: string; cut_off: boolean }>)[0]!;
      assert.equal(said.cut_off, true);
      // Words in proportion to what was played (4 ms a character): not all of it, not nothing.
      const words = said.content.split(' ').length;
      const all = LONG.split(' ').length;
      assert.ok(words > 1 && words < all / 2, `heard ${words} of ${all} words after ${Math.round(heardMs)} ms: ${said.content}`);
      assert.ok(LONG.startsWith(said.content), 'what was heard is the start of the reply');
    });

    it('the registry ends loopback calls at shutdown like any other (server_shutdown)', { timeout: 20_000 }, async () => {
      const other = await startMediaServer(kind.name, { providers: fakeProviders([]) });
      try {
        const agentId = await other.flowAgent(FLOW);
        const { endpoint } = await (other.app.transports.get('loopback') as LoopbackTransport).admit({ accountId: other.accountId, agent_id: agentId, callType: 'web_call', concurrencyLimit: null });
        await endpoint.waitFor((e) => e.type === 'started', 5_000);
        await other.runtime.media.sessions.close();
        assert.deepEqual(await endpoint.ended, { reason: 'server_shutdown', status: 'ended' });
      } finally {
        await other.close();
      }
    });
  });
}
