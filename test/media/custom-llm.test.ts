// A custom LLM end to end through real calls: the Node client joins a real server (real port, real
// store), the service dials a custom-LLM server written here from Retell's LLM WebSocket protocol
// (docs/custom-llm.md), and that server drives the call: a begin message, streamed responses, a
// stale response, an interrupted response, tool-call records, end_call. Servers that die mid-call,
// never open, send garbage or close with an error end the call with Retell's reasons.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { WebSocket } from 'ws';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, concat, eventually, fakeProviders, metricValue, silence, startMediaServer, tone } from './helpers.ts';

import { LlmServer, send, withoutWords, type Event } from './llm-server.ts';

for (const kind of STORES) {
  describe(`custom LLM over the LLM WebSocket protocol (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    let llm: LlmServer;
    const providers = fakeProviders([], { msPerChar: 2 });
    before(async () => {
      llm = new LlmServer();
      s = await startMediaServer(kind.name, { env: { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' }, providers });
    });
    after(async () => {
      await s.close();
      await llm.close();
    });

    async function customAgent(url = llm.url, type = 'custom_llm'): Promise<string> {
      const agent = await s.api('POST', '/create-agent', { response_engine: { type, llm_websocket_url: url } });
      assert.equal(agent.status, 201, JSON.stringify(agent.json));
      return agent.json.agent_id as string;
    }

    it('a Retell-style server drives a whole call: begin message, streamed response, tool calls, a stale response ignored, end_call', { timeout: 20_000 }, async () => {
      llm.behave = (ws) => {
        send(ws, { response_type: 'config', config: { auto_reconnect: false, call_details: true } });
        send(ws, { response_type: 'metadata', metadata: { screen: 'orders', ids: [1, 2] } });
        send(ws, { response_type: 'response', response_id: 0, content: 'Hello from ', content_complete: false });
        send(ws, { response_type: 'response', response_id: 0, content: 'your server.', content_complete: true });
      };
      llm.onEvent = (ws, event) => {
        if (event.interaction_type !== 'response_required') return;
        const id = event.response_id as number;
        send(ws, { response_type: 'response', response_id: id + 7, content: 'Stale words.', content_complete: true });
        send(ws, { response_type: 'tool_call_invocation', tool_call_id: 't1', name: 'lookup_order', arguments: '{"order_id":"42"}' });
        send(ws, { response_type: 'tool_call_result', tool_call_id: 't1', content: '{"status":"shipped"}' });
        send(ws, { response_type: 'response', response_id: id, content: 'Your order ', content_complete: false });
        send(ws, { response_type: 'response', response_id: id, content: 'has shipped. Bye.', content_complete: true, end_call: true });
      };
      const agentId = await customAgent(llm.url, 'custom-llm');
      providers.stt.push('where is my order');
      const client = await s.call(agentId);
      await client.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
      await client.play(concat(tone(600), silence(700)));
      const end = await client.ended;
      assert.equal(end.disconnection_reason, 'agent_hangup');
      const callId = client.callId;
      // The server's metadata reached the web client as it came.
      assert.deepEqual(client.events.filter((e) => e.type === 'metadata').map((e) => e['metadata']), [{ screen: 'orders', ids: [1, 2] }]);
      assert.ok(llm.connections.includes(`/llm-websocket/${callId}`), 'dialled {llm_websocket_url}/{call_id}');
      const details = llm.of(callId, 'call_details');
      assert.equal(details.length, 1);
      assert.equal(details[0]!.call.call_id, callId);
      assert.equal(details[0]!.call.access_token, undefined);
      const required = llm.of(callId, 'response_required');
      assert.equal(required.length, 1);
      assert.equal(required[0]!.response_id, 1);
      assert.deepEqual(withoutWords(required[0]!.transcript), [
        { role: 'agent', content: 'Hello from your server.' },
        { role: 'user', content: 'where is my order' },
      ]);
      // After the agent spoke (agent_turn came as it started: test/media/custom-llm-retell.test.ts).
      const updates = llm.of(callId, 'update_only').filter((e) => e.turntaking === 'user_turn');
      assert.ok(updates.length >= 1);
      assert.deepEqual(withoutWords(updates[0]!.transcript), [{ role: 'agent', content: 'Hello from your server.' }]);
      assert.equal(updates[0]!.turntaking, 'user_turn');
      const call = (await s.api('GET', `/v2/get-call/${callId}`)).json;
      assert.equal(call.call_status, 'ended');
      const entries = (call.transcript_with_tool_calls as Array<Record<string, string>>).map((e) =>
        e['role'] === 'tool_call_invocation' ? `invoke ${e['tool_call_id']} ${e['name']} ${e['arguments']}` : e['role'] === 'tool_call_result' ? `result ${e['tool_call_id']} ${e['content']}` : `${e['role']}: ${e['content']}`,
      );
      assert.deepEqual(entries.slice(0, 2).sort(), ['agent: Hello from your server.', 'user: where is my order']);
      assert.deepEqual(entries.slice(2), ['invoke t1 lookup_order {"order_id":"42"}', 'result t1 {"status":"shipped"}', 'agent: Your order has shipped. Bye.']);
      assert.doesNotMatch(call.transcript as string, /Stale/);
    });

    it('empty begin content: the user speaks first; an interrupted response is cut off and its late contents are ignored', { timeout: 20_000 }, async () => {
      const long = 'This is a very long answer that goes on and on about many things you did not ask about at all. '.repeat(4);
      llm.behave = (ws) => send(ws, { response_type: 'response', response_id: 0, content: '', content_complete: true });
      llm.onEvent = (ws, event) => {
        if (event.interaction_type !== 'response_required') return;
        if (event.response_id === 1) {
          send(ws, { response_type: 'response', response_id: 1, content: long, content_complete: false });
          // The rest of response 1 comes once the user has spoken again: it is stale by then.
        } else {
          send(ws, { response_type: 'response', response_id: 1, content: 'Late words of one.', content_complete: true });
          send(ws, { response_type: 'response', response_id: event.response_id, content: 'Okay, stopping.', content_complete: true, end_call: true });
        }
      };
      const slow = fakeProviders([], { msPerChar: 30 });
      const server = await startMediaServer(kind.name, { env: { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' }, providers: slow });
      try {
        const agent = await server.api('POST', '/create-agent', { response_engine: { type: 'custom_llm', llm_websocket_url: llm.url } });
        slow.stt.push('tell me something', 'stop please');
        const client = await server.call(agent.json.agent_id as string);
        await eventually(() => llm.connections.some((c) => c.endsWith(client.callId)));
        await client.play(concat(tone(600), silence(700)));
        await client.waitFor('agent_start_talking', 10_000);
        await new Promise((r) => setTimeout(r, 500));
        await client.play(concat(tone(600), silence(700)));
        const end = await client.ended;
        assert.equal(end.disconnection_reason, 'agent_hangup');
        const call = (await server.api('GET', `/v2/get-call/${client.callId}`)).json;
        const lines = (call.transcript_object as Array<{ role: string; content: string; cut_off?: boolean }>);
        assert.equal(lines[0]!.role, 'user');
        const cut = lines.find((u) => u.role === 'agent' && u.cut_off);
        assert.ok(cut && cut.content.length < long.length, 'the interrupted response is cut off');
        assert.equal(lines.at(-1)!.content, 'Okay, stopping.');
        assert.doesNotMatch(call.transcript as string, /Late words/);
        // The server was told what the user heard of the cut-off response.
        const second = llm.of(client.callId, 'response_required').find((e) => e.response_id === 2);
        assert.equal(second?.transcript.at(-2).content, cut.content);
      } finally {
        await server.close();
      }
    });

    it('agent_interrupt: the agent speaks unprompted (streamed), and its end_call ends the call', { timeout: 20_000 }, async () => {
      llm.behave = (ws) => send(ws, { response_type: 'response', response_id: 0, content: 'Hi there.', content_complete: true });
      llm.onEvent = (ws, event) => {
        // Once the greeting has been heard, the server speaks up on its own.
        if (event.interaction_type !== 'update_only' || event.transcript.length !== 1 || event.turntaking !== 'user_turn') return;
        send(ws, { response_type: 'agent_interrupt', interrupt_id: 1, content: 'Before you answer, ', content_complete: false });
        send(ws, { response_type: 'agent_interrupt', interrupt_id: 1, content: 'we are closing now. Bye.', content_complete: true, end_call: true });
      };
      // No reminders: only the interrupt can make the agent speak again.
      const agent = await s.api('POST', '/create-agent', { response_engine: { type: 'custom_llm', llm_websocket_url: llm.url }, reminder_max_count: 0 });
      const client = await s.call(agent.json.agent_id as string);
      const end = await client.ended;
      assert.equal(end.disconnection_reason, 'agent_hangup');
      const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
      assert.deepEqual((call.transcript_object as Array<{ role: string; content: string }>).map((u) => `${u.role}: ${u.content}`), [
        'agent: Hi there.',
        'agent: Before you answer, we are closing now. Bye.',
      ]);
      assert.equal(llm.of(client.callId, 'response_required').length, 0);
    });

    it('transfer_number on a web call: the words are said, the refusal is recorded, and the call goes on', { timeout: 20_000 }, async () => {
      llm.behave = (ws) => send(ws, { response_type: 'response', response_id: 0, content: 'Let me transfer you.', content_complete: true, transfer_number: '+14155550100' });
      llm.onEvent = (ws, event) => {
        // The call is still there after the refused transfer: the server speaks again, and ends it.
        if (event.interaction_type !== 'update_only' || event.transcript.length !== 1 || event.turntaking !== 'user_turn') return;
        send(ws, { response_type: 'agent_interrupt', interrupt_id: 1, content: 'I am still here. Bye.', content_complete: true, end_call: true });
      };
      const agent = await s.api('POST', '/create-agent', { response_engine: { type: 'custom_llm', llm_websocket_url: llm.url }, reminder_max_count: 0 });
      const client = await s.call(agent.json.agent_id as string);
      assert.equal((await client.ended).disconnection_reason, 'agent_hangup');
      const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
      assert.deepEqual((call.transcript_object as Array<{ content: string }>).map((u) => u.content), ['Let me transfer you.', 'I am still here. Bye.']);
      assert.equal(call.transfer_destination ?? null, null);
      const tools = (call.transcript_with_tool_calls as Array<Record<string, unknown>>).filter((u) => String(u['role']).startsWith('tool_call'));
      assert.deepEqual(tools.map((u) => u['name'] ?? u['content']), ['transfer_call', 'error: this call cannot be transferred (it is not a phone call)']);
      assert.equal(tools[0]?.['arguments'], '{"number":"+14155550100"}');
    });

    it('reminder_required after the agent\'s reminder_trigger_ms of user silence, at most reminder_max_count in a row', { timeout: 20_000 }, async () => {
      llm.behave = (ws) => send(ws, { response_type: 'response', response_id: 0, content: 'Hello.', content_complete: true });
      llm.onEvent = (ws, event) => {
        if (event.interaction_type !== 'reminder_required') return;
        send(ws, { response_type: 'response', response_id: event.response_id, content: event.response_id === 1 ? 'Are you still there?' : 'Hello?', content_complete: true });
      };
      const agent = await s.api('POST', '/create-agent', {
        response_engine: { type: 'custom_llm', llm_websocket_url: llm.url }, reminder_trigger_ms: 1_000, reminder_max_count: 2,
      });
      assert.equal(agent.status, 201, JSON.stringify(agent.json));
      assert.equal(agent.json.reminder_trigger_ms, 1_000);
      const started = Date.now();
      const client = await s.call(agent.json.agent_id as string);
      await eventually(() => llm.of(client.callId, 'reminder_required').length === 2);
      assert.ok(Date.now() - started >= 2_000, 'two reminders, each after a second of silence');
      await client.waitFor((e) => e.type === 'agent_stop_talking' && e['utterance_id'] === 'utt_3', 5_000);
      // No third reminder: the user has not spoken since the first.
      await new Promise((r) => setTimeout(r, 1_500));
      await client.hangup();
      const reminders = llm.of(client.callId, 'reminder_required');
      assert.deepEqual(reminders.map((e) => e.response_id), [1, 2]);
      assert.deepEqual(withoutWords(reminders[1]!.transcript), [{ role: 'agent', content: 'Hello.' }, { role: 'agent', content: 'Are you still there?' }]);
      const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
      assert.deepEqual((call.transcript_object as Array<{ content: string }>).map((u) => u.content), ['Hello.', 'Are you still there?', 'Hello?']);
    });

    it('auto_reconnect: the service pings, dials again when the connection breaks, and asks the new one what the lost one left unanswered', { timeout: 20_000 }, async () => {
      let dialled = 0;
      llm.behave = (ws) => {
        dialled += 1;
        send(ws, { response_type: 'config', config: { auto_reconnect: true, call_details: false } });
        if (dialled === 1) send(ws, { response_type: 'response', response_id: 0, content: 'Hello.', content_complete: true });
      };
      llm.onEvent = (ws, event) => {
        if (event.interaction_type === 'ping_pong') send(ws, { response_type: 'ping_pong', timestamp: Date.now() });
        if (event.interaction_type !== 'response_required') return;
        // The first connection breaks on the user's turn, before answering it.
        if (dialled === 1) ws.terminate();
        else send(ws, { response_type: 'response', response_id: event.response_id, content: 'Still here. Bye.', content_complete: true, end_call: true });
      };
      const client = await s.call(await customAgent());
      await eventually(() => llm.of(client.callId, 'ping_pong').length >= 1, 10_000);
      providers.stt.push('are you there');
      await client.play(concat(tone(600), silence(700)));
      const end = await client.ended;
      assert.equal(end.disconnection_reason, 'agent_hangup');
      assert.equal(llm.connections.filter((c) => c.endsWith(client.callId)).length, 2);
      assert.deepEqual(llm.of(client.callId, 'response_required').map((e) => e.response_id), [1, 1]);
      assert.equal(client.transcript.at(-1)?.content, 'Still here. Bye.');
    });

    it("auto_reconnect: the user's server restarted mid-call (a redeploy): the agent says to hold on, dials again with backoff, and the turn asked meanwhile is answered", { timeout: 30_000 }, async () => {
      const first = new LlmServer();
      await first.listening;
      const port = Number(new URL(first.url).port);
      first.behave = (ws) => {
        send(ws, { response_type: 'config', config: { auto_reconnect: true, call_details: false } });
        send(ws, { response_type: 'response', response_id: 0, content: 'Hello.', content_complete: true });
      };
      first.onEvent = (ws, event) => event.interaction_type === 'ping_pong' && send(ws, { response_type: 'ping_pong', timestamp: Date.now() });
      let client: Awaited<ReturnType<typeof s.call>>;
      try {
        client = await s.call(await customAgent(first.url));
        await client.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
      } finally {
        // The redeploy: the old server goes away (closed here even if the call failed to start).
        await first.close();
      }
      // The caller speaks while nothing listens.
      const downAt = Date.now();
      providers.stt.push('are you there');
      await client.play(concat(tone(600), silence(700)));
      await eventually(() => client.transcript.some((u) => u.role === 'agent' && /One moment, please\./.test(u.content)) || Date.now() - downAt > 2_500, 5_000);
      const second = new LlmServer(port);
      try {
        await second.listening;
        second.behave = (ws) => send(ws, { response_type: 'config', config: { auto_reconnect: true, call_details: false } });
        second.onEvent = (ws, event) => {
          if (event.interaction_type === 'ping_pong') send(ws, { response_type: 'ping_pong', timestamp: Date.now() });
          if (event.interaction_type === 'response_required') send(ws, { response_type: 'response', response_id: event.response_id, content: 'Still here. Bye.', content_complete: true, end_call: true });
        };
        const end = await client.ended;
        assert.equal(end.disconnection_reason, 'agent_hangup');
        assert.equal(second.connections.length, 1, 'the new server was dialled once');
        const asked = second.of(client.callId, 'response_required');
        assert.deepEqual(asked.map((e) => [e.response_id, e.transcript.at(-1)?.content]), [[1, 'are you there']], 'the turn asked while the server was down');
        const agentSaid = client.transcript.filter((u) => u.role === 'agent').map((u) => u.content).join(' ');
        assert.match(agentSaid, /One moment, please\..*Still here\. Bye\./s);
      } finally {
        await second.close();
      }
    });

    const failures: Array<[string, () => string, (ws: WebSocket) => void, (ws: WebSocket, event: Event) => void, string]> = [
      ['a server that dies mid-call', () => llm.url, (ws) => send(ws, { response_type: 'response', response_id: 0, content: 'Hi.', content_complete: true }), (ws, e) => e.interaction_type === 'response_required' && ws.terminate(), 'error_llm_websocket_lost_connection'],
      ['a server that never opens', () => 'ws://127.0.0.1:1/nothing', () => {}, () => {}, 'error_llm_websocket_open'],
      ['a server that sends garbage', () => llm.url, (ws) => ws.send('this is not json {'), () => {}, 'error_llm_websocket_corrupt_payload'],
      ['a server that closes with an internal error', () => llm.url, (ws) => ws.close(1011, 'boom'), () => {}, 'error_llm_websocket_runtime'],
      ['a frame over 64 KiB', () => llm.url, (ws) => send(ws, { response_type: 'metadata', metadata: 'x'.repeat(70_000) }), () => {}, 'error_llm_websocket_corrupt_payload'],
      ['a flood of frames', () => llm.url, (ws) => { for (let i = 0; i < 250; i++) send(ws, { response_type: 'ping_pong', timestamp: i }); }, () => {}, 'error_llm_websocket_corrupt_payload'],
      ['a response longer than the limit', () => llm.url, (ws) => send(ws, { response_type: 'response', response_id: 0, content: 'x'.repeat(10_001), content_complete: true }), () => {}, 'error_llm_websocket_corrupt_payload'],
    ];
    for (const [label, url, behave, onEvent, reason] of failures) {
      it(`${label} ends the call with ${reason}`, { timeout: 20_000 }, async () => {
        llm.behave = behave;
        llm.onEvent = onEvent;
        const counted = await metricValue(s.baseUrl, 'switchboard_custom_llm_failures_total', { reason });
        const client = await s.call(await customAgent(url()));
        const errorEvent = client.waitFor((e) => e.type === 'error', 15_000);
        if (reason === 'error_llm_websocket_lost_connection') {
          providers.stt.push('hello there');
          await client.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
          await client.play(concat(tone(600), silence(700)));
        }
        const end = await client.ended;
        assert.equal(end.disconnection_reason, reason);
        assert.equal((await errorEvent)['code'], reason);
        const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
        assert.equal(call.call_status, 'error');
        assert.equal(call.disconnection_reason, reason);
        assert.equal(await metricValue(s.baseUrl, 'switchboard_custom_llm_failures_total', { reason }), counted + 1);
      });
    }

    it("docs/custom-llm.md's minimal server, run as written, drives a call", { timeout: 20_000 }, async () => {
      const doc = readFileSync(new URL('../../docs/custom-llm.md', import.meta.url), 'utf8');
      const code = /```js\n([\s\S]*?)```/.exec(doc)![1]!;
      const port = await new Promise<number>((resolve) => {
        const probe = createServer().listen(0, '127.0.0.1', () => {
          const { port: free } = probe.address() as AddressInfo;
          probe.close(() => resolve(free));
        });
      });
      assert.match(code, /port: 8080/);
      const child = spawn(process.execPath, ['--input-type=module', '-e', code.replace('port: 8080', `port: ${port}`)], { cwd: new URL('../..', import.meta.url), stdio: 'ignore' });
      try {
        // Listening once it answers a plain HTTP request (with 426, Upgrade Required).
        await eventually(() => fetch(`http://127.0.0.1:${port}`).then(() => true, () => false));
        providers.stt.push('thanks bye');
        const client = await s.call(await customAgent(`ws://127.0.0.1:${port}`));
        await client.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
        await client.play(concat(tone(600), silence(700)));
        const end = await client.ended;
        assert.equal(end.disconnection_reason, 'agent_hangup');
        assert.deepEqual(client.transcript.map((u) => `${u.role}: ${u.content}`), ['agent: Hello! Say something.', 'user: thanks bye', 'agent: Goodbye!']);
      } finally {
        child.kill();
      }
    });

    it('the URL must be ws(s) to an allowed destination', async () => {
      const cases: Array<[string, RegExp]> = [
        ['https://example.com/llm', /response_engine\.llm_websocket_url must be an absolute ws or wss URL/],
        ['not a url', /must be an absolute ws or wss URL/],
        ['ws://10.0.0.1/llm', /response_engine\.llm_websocket_url is not an allowed webhook destination/],
        ['wss://example.com/llm?x=1', /must not have a query or fragment/],
      ];
      for (const [url, message] of cases) {
        const created = await s.api('POST', '/create-agent', { response_engine: { type: 'custom_llm', llm_websocket_url: url } });
        assert.equal(created.status, 400, url);
        assert.match(created.json.message, message, url);
      }
      const ok = await s.api('POST', '/create-agent', { response_engine: { type: 'custom-llm', llm_websocket_url: 'wss://example.com/llm' } });
      assert.equal(ok.status, 201);
      assert.deepEqual(ok.json.response_engine, { type: 'custom_llm', llm_websocket_url: 'wss://example.com/llm' });
      const versions = await s.api('GET', `/get-agent-versions/${ok.json.agent_id}`);
      assert.equal(versions.json[0].response_engine.llm_websocket_url, 'wss://example.com/llm');
    });
  });
}
