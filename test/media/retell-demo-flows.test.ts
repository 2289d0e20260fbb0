// The protocol flows of Retell's two custom-LLM demo servers (RetellAI/retell-custom-llm-node-demo
// and RetellAI/retell-custom-llm-python-demo), written anew from what they send and read, run
// against real calls on our server (issue 26, item 10). Each flow is a server here that behaves as
// the demo does on the wire, and fails the way the demo would where we differ (an exception in the
// Python demo's handler closes its socket with 1011).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { WebSocket } from 'ws';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, concat, fakeProviders, silence, startMediaServer, tone } from './helpers.ts';
import { LlmServer, send, type Event } from './llm-server.ts';

const speak = () => concat(tone(600), silence(700));

/**
 * The Node demo's flow: no config; a begin message with `end_call: false`; each
 * response_required or reminder_required answered by streamed deltas (`content_complete: false`)
 * closed by an empty `content_complete: true`. Its functions: `book_appointment` says a filler,
 * records the invocation, works, records the result, then answers anew on the same response id;
 * `end_call` says a last message with `end_call: true`. update_only and anything else are ignored.
 */
function nodeDemoFlow(llm: LlmServer, answers: Map<string, (ws: WebSocket, event: Event) => void>): void {
  llm.behave = (ws) => send(ws, { response_type: 'response', response_id: 0, content: 'Hey there, how can I help you', content_complete: true, end_call: false });
  llm.onEvent = (ws, event) => {
    if (event.interaction_type !== 'response_required' && event.interaction_type !== 'reminder_required') return;
    const said = String(event.transcript.at(-1)?.content ?? '');
    const answer = event.interaction_type === 'reminder_required' ? answers.get('(reminder)') : answers.get(said);
    (answer ?? answers.get('*')!)(ws, event);
  };
}

const stream = (ws: WebSocket, id: number, text: string) => {
  for (const delta of text.match(/\S+\s*/g) ?? []) send(ws, { response_type: 'response', response_id: id, content: delta, content_complete: false, end_call: false });
  send(ws, { response_type: 'response', response_id: id, content: '', content_complete: true, end_call: false });
};

/**
 * The Python demo's flow: a config asking for `auto_reconnect` and `call_details` (with a stray
 * `response_id: 1` beside it), the begin message; it echoes each ping_pong; on a turn it reads the
 * start of every utterance's `words` (an exception there closes the socket with 1011, as the
 * demo's handler does), and streams its answer, abandoning it once a newer response id has come.
 */
function pythonDemoFlow(llm: LlmServer, answer: (said: string) => { text: string; endCall: boolean }): { pongs: number } {
  const state = { pongs: 0 };
  llm.behave = (ws) => {
    send(ws, { response_type: 'config', config: { auto_reconnect: true, call_details: true }, response_id: 1 });
    send(ws, { response_type: 'response', response_id: 0, content: 'Hello, this is the demo agent.', content_complete: true, end_call: false });
  };
  let latest = 0;
  llm.onEvent = (ws, event) => {
    try {
      if (event.interaction_type === 'ping_pong') {
        state.pongs += 1;
        return send(ws, { response_type: 'ping_pong', timestamp: event.timestamp });
      }
      if (event.interaction_type !== 'response_required' && event.interaction_type !== 'reminder_required') return;
      latest = event.response_id as number;
      const transcript = event.transcript as Array<{ role: string; content: string; words: Array<{ start: number }> }>;
      if (transcript.length >= 2) {
        // The demo prints the conversation ordered by each utterance's first word.
        const starts = transcript.map((u) => (u.words.length > 0 ? u.words[0]!.start : 0));
        assert.ok(starts.every((t) => typeof t === 'number'));
      }
      const { text, endCall } = answer(transcript.at(-1)?.content ?? '');
      const id = event.response_id as number;
      for (const delta of text.match(/\S+\s*/g) ?? []) {
        if (id < latest) return; // a newer turn: abandon this one
        send(ws, { response_type: 'response', response_id: id, content: delta, content_complete: false, end_call: false });
      }
      send(ws, { response_type: 'response', response_id: id, content: '', content_complete: true, end_call: endCall });
    } catch {
      ws.close(1011, 'Server error');
    }
  };
  return state;
}

for (const kind of STORES) {
  describe(`Retell's demo servers' protocol flows (${kind.name})`, { skip: kind.skip }, () => {
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

    async function agent(extra: Record<string, unknown> = {}): Promise<string> {
      const created = await s.api('POST', '/create-agent', { response_engine: { type: 'custom-llm', llm_websocket_url: llm.url }, ...extra });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      return created.json.agent_id as string;
    }

    it('the Node demo: begin message, a streamed answer, a reminder, book_appointment (filler, tool records, answer), end_call', { timeout: 30_000 }, async () => {
      const answers = new Map<string, (ws: WebSocket, event: Event) => void>([
        ['i feel stressed', (ws, e) => stream(ws, e.response_id, 'I hear you. What is on your mind?')],
        ['(reminder)', (ws, e) => stream(ws, e.response_id, 'Are you still with me?')],
        [
          'book me an appointment',
          (ws, e) => {
            send(ws, { response_type: 'response', response_id: e.response_id, content: 'One moment while I book that.', content_complete: false, end_call: false });
            send(ws, { response_type: 'tool_call_invocation', tool_call_id: 'call_1', name: 'book_appointment', arguments: '{"message":"One moment while I book that.","date":"2026-12-01"}' });
            setTimeout(() => {
              send(ws, { response_type: 'tool_call_result', tool_call_id: 'call_1', content: 'Appointment booked successfully' });
              stream(ws, e.response_id, ' You are booked for December first.');
            }, 300);
          },
        ],
        ['goodbye', (ws, e) => send(ws, { response_type: 'response', response_id: e.response_id, content: 'Take care, goodbye.', content_complete: true, end_call: true })],
        ['*', (ws, e) => stream(ws, e.response_id, 'Tell me more.')],
      ]);
      nodeDemoFlow(llm, answers);
      providers.stt.push('i feel stressed', 'book me an appointment', 'goodbye');
      const client = await s.call(await agent({ reminder_trigger_ms: 1_000, reminder_max_count: 1 }));
      await client.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
      await client.play(speak());
      // Silent after the answer: the reminder comes and is spoken.
      await client.waitFor((e) => e.type === 'update' && JSON.stringify(e['transcript']).includes('Are you still with me?'), 10_000);
      await client.waitFor(() => client.events.filter((e) => e.type === 'agent_stop_talking').length >= 3, 10_000);
      await client.play(speak());
      await client.waitFor((e) => e.type === 'update' && JSON.stringify(e['transcript']).includes('December first'), 10_000);
      await client.play(speak());
      assert.equal((await client.ended).disconnection_reason, 'agent_hangup');
      const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
      const lines = (call.transcript_object as Array<{ role: string; content: string }>).map((u) => `${u.role}: ${u.content}`);
      assert.deepEqual(lines, [
        'agent: Hey there, how can I help you',
        'user: i feel stressed',
        'agent: I hear you. What is on your mind?',
        'agent: Are you still with me?',
        'user: book me an appointment',
        'agent: One moment while I book that. You are booked for December first.',
        'user: goodbye',
        'agent: Take care, goodbye.',
      ]);
      const tools = (call.transcript_with_tool_calls as Array<{ role: string; tool_call_id?: string }>).filter((e) => e.role.startsWith('tool_call'));
      assert.deepEqual(tools.map((e) => `${e.role} ${e.tool_call_id}`), ['tool_call_invocation call_1', 'tool_call_result call_1']);
      assert.equal(llm.of(client.callId, 'reminder_required').length, 1);
    });

    it('the Python demo: config with auto_reconnect and call_details, ping_pong echoed, words read on every utterance, end_call', { timeout: 30_000 }, async () => {
      const state = pythonDemoFlow(llm, (said) => (said === 'thanks bye' ? { text: 'Goodbye!', endCall: true } : { text: `You said ${said}.`, endCall: false }));
      providers.stt.push('hello there', 'thanks bye');
      const client = await s.call(await agent({ reminder_max_count: 0 }));
      await client.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
      await client.play(speak());
      await client.waitFor((e) => e.type === 'update' && JSON.stringify(e['transcript']).includes('You said hello there.'), 10_000);
      // Long enough for the service's ping_pong (every 2 s with auto_reconnect).
      await new Promise((r) => setTimeout(r, 2_300));
      await client.play(speak());
      const end = await client.ended;
      assert.equal(end.disconnection_reason, 'agent_hangup', 'the demo never closed its socket with 1011');
      assert.equal(llm.of(client.callId, 'call_details').length, 1);
      assert.ok(llm.of(client.callId, 'ping_pong').length >= 1 && state.pongs >= 1, 'ping_pong went both ways');
      const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
      assert.deepEqual((call.transcript_object as Array<{ role: string; content: string }>).map((u) => `${u.role}: ${u.content}`), [
        'agent: Hello, this is the demo agent.',
        'user: hello there',
        'agent: You said hello there.',
        'user: thanks bye',
        'agent: Goodbye!',
      ]);
    });
  });
}
