// Retell's names and turn-taking on the LLM WebSocket, through real calls (issue 26, item 5): a
// custom-LLM server written here from Retell's protocol reads `retell_llm_dynamic_variables` in
// `call_details`, asks for `transcript_with_tool_calls` in its config, hears `agent_turn` and the
// user's live partial transcript in `update_only`, sends a response the user cannot interrupt
// (`no_interruption_allowed`), and is asked once about a turn the user spoke in two fragments; and
// a response streamed without content_complete is still spoken (item 4's idle flush).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeStt } from '../../src/providers/fake/fake.providers.ts';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, concat, eventually, fakeProviders, silence, startMediaServer, tone } from './helpers.ts';
import { LlmServer, send, withoutWords } from './llm-server.ts';

const speak = () => concat(tone(600), silence(700));

for (const kind of STORES) {
  describe(`custom LLM: Retell's names and turn-taking (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    let llm: LlmServer;
    const providers = { ...fakeProviders([], { msPerChar: 2 }), stt: new FakeStt([], { interims: true }) };
    before(async () => {
      llm = new LlmServer();
      s = await startMediaServer(kind.name, { env: { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' }, providers });
    });
    after(async () => {
      await s.close();
      await llm.close();
    });

    async function customAgent(): Promise<string> {
      const agent = await s.api('POST', '/create-agent', { response_engine: { type: 'custom-llm', llm_websocket_url: llm.url }, reminder_max_count: 0 });
      assert.equal(agent.status, 201, JSON.stringify(agent.json));
      return agent.json.agent_id as string;
    }

    it('call_details has retell_llm_dynamic_variables; transcript_with_tool_calls when config asks; agent_turn; two fragments are one turn', { timeout: 20_000 }, async () => {
      llm.behave = (ws) => {
        send(ws, { response_type: 'config', config: { call_details: true, transcript_with_tool_calls: true } });
        send(ws, { response_type: 'response', response_id: 0, content: 'Hello.', content_complete: true });
      };
      llm.onEvent = (ws, event) => {
        if (event.interaction_type !== 'response_required') return;
        if (event.response_id === 1) {
          // The server looks something up and has not answered when the user goes on.
          send(ws, { response_type: 'tool_call_invocation', tool_call_id: 't1', name: 'find_table', arguments: '{}' });
          send(ws, { response_type: 'tool_call_result', tool_call_id: 't1', content: 'free' });
          return;
        }
        send(ws, { response_type: 'response', response_id: event.response_id, content: 'Booked. Bye.', content_complete: true, end_call: true });
      };
      providers.stt.push('i want', 'to book a table');
      const client = await s.call(await customAgent(), { retell_llm_dynamic_variables: { customer_name: 'Ada' } });
      await client.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
      await client.play(speak());
      await eventually(() => llm.of(client.callId, 'response_required').length === 1);
      await client.play(speak());
      const end = await client.ended;
      assert.equal(end.disconnection_reason, 'agent_hangup');

      const details = llm.of(client.callId, 'call_details');
      assert.deepEqual(details[0]!.call.retell_llm_dynamic_variables, { customer_name: 'Ada' });
      assert.deepEqual(details[0]!.call.service_llm_dynamic_variables, { customer_name: 'Ada' });

      const required = llm.of(client.callId, 'response_required');
      assert.deepEqual(required.map((e) => e.response_id), [1, 2]);
      // The second fragment joins the first: one user turn, asked about as a whole.
      assert.deepEqual(withoutWords(required[1]!.transcript), [
        { role: 'agent', content: 'Hello.' },
        { role: 'user', content: 'i want to book a table' },
      ]);
      // Every utterance has Retell's `words` (empty: the fake recogniser gives no word times).
      for (const u of required[1]!.transcript) assert.deepEqual(u.words, []);
      assert.deepEqual(withoutWords(required[1]!.transcript_with_tool_calls), [
        { role: 'agent', content: 'Hello.' },
        { role: 'user', content: 'i want' },
        { role: 'tool_call_invocation', tool_call_id: 't1', name: 'find_table', arguments: '{}' },
        { role: 'tool_call_result', tool_call_id: 't1', content: 'free' },
        { role: 'user', content: 'to book a table' },
      ]);

      // agent_turn as the agent starts speaking, user_turn once it has spoken.
      const turns = llm.of(client.callId, 'update_only').filter((e) => e.turntaking !== undefined);
      assert.deepEqual(turns.slice(0, 2).map((e) => [e.turntaking, e.transcript.length]), [['agent_turn', 0], ['user_turn', 1]]);
      assert.ok(turns.every((e) => Array.isArray(e.transcript_with_tool_calls)), 'every update carries transcript_with_tool_calls');
    });

    it('update_only streams the user\'s live partial transcript before the turn is asked for', { timeout: 20_000 }, async () => {
      llm.behave = (ws) => send(ws, { response_type: 'response', response_id: 0, content: '', content_complete: true });
      llm.onEvent = (ws, event) => {
        if (event.interaction_type === 'response_required') send(ws, { response_type: 'response', response_id: event.response_id, content: 'Bye.', content_complete: true, end_call: true });
      };
      providers.stt.push('one two three four');
      const client = await s.call(await customAgent());
      await eventually(() => llm.connections.some((c) => c.endsWith(client.callId)));
      await client.play(concat(tone(1_000), silence(700)));
      await client.ended;
      const events = llm.received.filter((r) => r.callId === client.callId).map((r) => r.event);
      const asked = events.findIndex((e) => e.interaction_type === 'response_required');
      const partials = events.slice(0, asked).filter((e) => e.interaction_type === 'update_only').map((e) => e.transcript.at(-1));
      assert.ok(partials.length >= 2, `live partials before response_required: ${JSON.stringify(partials)}`);
      for (const p of partials) assert.equal(p.role, 'user');
      assert.deepEqual(partials.slice(0, 2).map((p) => p.content), ['one', 'one two']);
      assert.deepEqual(withoutWords(events[asked]!.transcript), [{ role: 'user', content: 'one two three four' }]);
      // Without the config's flag, no transcript_with_tool_calls.
      assert.equal(events[asked]!.transcript_with_tool_calls, undefined);
    });

    it('no_interruption_allowed: speech over the response does not cut it off, and is answered after it', { timeout: 20_000 }, async () => {
      const long = 'This answer must be heard to its end. '.repeat(40).trim();
      llm.behave = (ws) => send(ws, { response_type: 'response', response_id: 0, content: '', content_complete: true });
      llm.onEvent = (ws, event) => {
        if (event.interaction_type !== 'response_required') return;
        if (event.response_id === 1) send(ws, { response_type: 'response', response_id: 1, content: long, content_complete: true, no_interruption_allowed: true });
        else send(ws, { response_type: 'response', response_id: event.response_id, content: 'Now I listen. Bye.', content_complete: true, end_call: true });
      };
      providers.stt.push('tell me', 'wait a moment');
      const client = await s.call(await customAgent());
      await eventually(() => llm.connections.some((c) => c.endsWith(client.callId)));
      await client.play(speak());
      await client.waitFor('agent_start_talking', 10_000);
      await new Promise((r) => setTimeout(r, 300));
      await client.play(speak());
      const end = await client.ended;
      assert.equal(end.disconnection_reason, 'agent_hangup');
      const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
      const lines = call.transcript_object as Array<{ role: string; content: string; cut_off: boolean }>;
      const answer = lines.find((u) => u.role === 'agent' && u.content.startsWith('This answer'));
      assert.equal(answer?.content, long);
      assert.equal(answer?.cut_off, false);
      const second = llm.of(client.callId, 'response_required').find((e) => e.response_id === 2);
      assert.deepEqual(withoutWords(second?.transcript.slice(-2)), [
        { role: 'agent', content: long },
        { role: 'user', content: 'wait a moment' },
      ]);
      assert.equal(llm.of(client.callId, 'update_only').some((e) => e.agent_cut_off === true), false);
    });

    it('a response that never sends content_complete is still spoken (the idle flush), and the call goes on', { timeout: 20_000 }, async () => {
      llm.behave = (ws) => send(ws, { response_type: 'response', response_id: 0, content: '', content_complete: true });
      llm.onEvent = (ws, event) => {
        if (event.interaction_type === 'response_required' && event.response_id === 1) send(ws, { response_type: 'response', response_id: 1, content: 'Let me see what I can find' });
        if (event.interaction_type === 'response_required' && event.response_id === 2) send(ws, { response_type: 'response', response_id: 2, content: 'Bye.', content_complete: true, end_call: true });
      };
      providers.stt.push('find me a flight', 'never mind');
      const client = await s.call(await customAgent());
      await eventually(() => llm.connections.some((c) => c.endsWith(client.callId)));
      await client.play(speak());
      // Heard although content_complete never comes.
      await client.waitFor('agent_start_talking', 5_000);
      await new Promise((r) => setTimeout(r, 400));
      await client.play(speak());
      assert.equal((await client.ended).disconnection_reason, 'agent_hangup');
      const second = llm.of(client.callId, 'response_required').find((e) => e.response_id === 2);
      assert.equal(second?.transcript.find((u: { role: string }) => u.role === 'agent')?.content.startsWith('Let me see'), true);
    });
  });
}
