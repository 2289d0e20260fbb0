// Barge-in and a hang-up over the agent as the caller sees them, and faults: a recogniser that is
// missing or dies, an LLM server that stalls, answers garbage or fails, a speech server that
// fails. Each call ends cleanly with the right reason, and the caller never sees upstream details.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { FvadProvider } from '../../src/providers/vad/fvad.ts';
import { PocketsphinxStt } from '../../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import { OpenAiChatLlm } from '../../src/providers/openai/chat.llm.ts';
import { OpenAiSpeechTts } from '../../src/providers/openai/speech.tts.ts';
import { STORES } from '../helpers/stores.ts';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../voice/capabilities.ts';
import { capturingLogger, concat, eventually, fakeProviders, silence, startMediaServer, tone } from './helpers.ts';

const flite = new FliteTts();
after(() => flite.close());

async function speech(text: string): Promise<Int16Array> {
  const parts: Int16Array[] = [];
  for await (const c of flite.synthesize(text, { voiceId: 'flite-kal16' })) parts.push(c);
  return concat(...parts);
}

const LONG = 'Let me tell you about every one of our plans, one by one, in great detail. '.repeat(4).trim();
const talker = {
  start_node_id: 'talk',
  nodes: [
    {
      id: 'talk', type: 'conversation', instruction: { type: 'static_text', text: LONG },
      edges: [{ id: 'e', destination_node_id: 'bye', transition_condition: { type: 'keyword', keywords: ['goodbye'] } }],
    },
    { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Bye.' } },
  ],
};

describe('barge-in over the transport', () => {
  it('the caller talks over the agent: agent audio stops within 200 ms as the client sees it; reply cut off', async (t) => {
    const base = fakeProviders(['wait a moment please'], { msPerChar: 40 });
    const s = await startMediaServer('sqlite', { providers: { ...base, vad: new FvadProvider() } });
    try {
      const user = await speech('wait a moment please');
      let onsetFrame = 0;
      for (let i = 0; i + 320 <= user.length; i += 320, onsetFrame++) {
        let e = 0;
        for (const x of user.subarray(i, i + 320)) e += x * x;
        if (Math.sqrt(e / 320) > 300) break;
      }
      const client = await s.call(await s.flowAgent(talker));
      await client.waitFor('agent_start_talking', 5_000);
      await new Promise((r) => setTimeout(r, 1_000));
      const playAt = client.now();
      const onsetAt = playAt + onsetFrame * 20;
      await client.play(concat(user, silence(1_000)));
      const clear = await client.waitFor('clear', 2_000);
      const stop = await client.waitFor('agent_stop_talking', 2_000);
      assert.equal(stop['cut_off'], true);
      const lastAudio = Math.max(...client.agentAudio.filter((a) => a.atMs <= stop.atMs + 50).map((a) => a.atMs));
      const stoppedAfter = Math.max(clear.atMs, lastAudio) - onsetAt;
      t.diagnostic(`agent audio stopped ${Math.round(stoppedAfter)} ms after the caller's speech onset (clear at ${Math.round(clear.atMs - onsetAt)} ms)`);
      assert.ok(stoppedAfter <= 200, `agent audio went on ${Math.round(stoppedAfter)} ms after the caller's speech began`);
      assert.ok(client.agentAudio.filter((a) => a.atMs > stop.atMs + 50 && a.atMs < stop.atMs + 500).length === 0, 'nothing after the clear');
      await client.waitFor((e) => e.type === 'update' && (e['transcript'] as Array<{ role: string }>).some((u) => u.role === 'user'), 5_000);
      const cut = client.transcript.find((u) => u.role === 'agent' && u.cut_off);
      assert.ok(cut && cut.content.length > 0 && cut.content.length < LONG.length, 'the transcript marks the reply as cut off');
      await client.hangup();
      const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
      assert.equal(call.transcript_object[0].cut_off, true);
      assert.match(call.transcript, /\[cut off\]/);
    } finally {
      await s.close();
    }
  });
});

for (const kind of STORES) {
  describe(`a hang-up while the agent speaks on ${kind.name}`, { skip: kind.skip }, () => {
    it('keeps what the agent said up to the hang-up, marked cut off', async () => {
      const s = await startMediaServer(kind.name, { providers: fakeProviders([], { msPerChar: 15 }) });
      try {
        const client = await s.call(await s.flowAgent(talker));
        await client.waitFor('agent_start_talking', 5_000);
        // 1.5 s of the reply heard (about 4.5 s long), then the user hangs up.
        await eventually(() => client.agentAudio.reduce((n, a) => n + a.pcm.length, 0) >= 24_000);
        const end = await client.hangup();
        assert.equal(end.disconnection_reason, 'user_hangup');
        const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
        assert.equal(call.transcript_object.length, 1, JSON.stringify(call.transcript_object));
        const [said] = call.transcript_object;
        assert.equal(said.role, 'agent');
        assert.equal(said.cut_off, true);
        assert.ok(said.content.length > 20 && said.content.length < LONG.length * 0.6, `kept: ${said.content}`);
        assert.ok(LONG.startsWith(said.content.replace(/\.$/, '')), 'what was kept is the start of the reply');
        assert.ok(said.end_ms - said.start_ms >= 1_400, `${said.start_ms}..${said.end_ms} ms`);
        assert.equal(call.transcript, `Agent: ${said.content} [cut off]`);
      } finally {
        await s.close();
      }
    });
  });
}

describe('faults end calls cleanly with the right reason', () => {
  it('a missing recogniser ends the call at once with error_asr; the log says what to install', async () => {
    const base = fakeProviders([]);
    const { logger, lines } = capturingLogger();
    const s = await startMediaServer('sqlite', { providers: { ...base, stt: new PocketsphinxStt({ mode: 'process', binary: 'definitely_not_pocketsphinx' }) }, logger });
    try {
      const client = await s.call(await s.flowAgent(talker));
      const end = await client.ended;
      assert.deepEqual([end.call_status, end.disconnection_reason, end.close_code], ['error', 'error_asr', 1011]);
      const err = client.events.find((e) => e.type === 'error');
      assert.equal(err?.['code'], 'error_asr');
      assert.equal(err?.['message'], 'Speech recognition failed; the call ends.');
      assert.match(String(lines.find((l) => l['msg'] === 'voice pipeline failed')?.['detail']), /apt-get install pocketsphinx/);
      const row = await s.runtime.services.calls.readCall(client.callId);
      assert.deepEqual([row?.call_status, row?.disconnection_reason], ['error', 'error_asr']);
    } finally {
      await s.close();
    }
  });

  it('the recogniser process dies mid-call: error_asr', async (t) => {
    if (!hasPocketsphinx()) return t.skip(NO_POCKETSPHINX);
    const base = fakeProviders([]);
    const s = await startMediaServer('sqlite', { providers: { ...base, stt: new PocketsphinxStt({ mode: 'process' }), vad: new FvadProvider() } });
    try {
      const client = await s.call(await s.flowAgent(talker, { interruption_sensitivity: 0 }));
      await client.waitFor('agent_start_talking', 5_000);
      const said = client.play(concat(await speech('i would like to say goodbye now'), silence(1_500)));
      await new Promise((r) => setTimeout(r, 700));
      const killed = killDescendants('pocketsphinx');
      assert.ok(killed > 0, 'a recogniser process was running');
      const end = await client.ended;
      await said;
      assert.deepEqual([end.call_status, end.disconnection_reason], ['error', 'error_asr']);
      assert.equal(client.events.find((e) => e.type === 'error')?.['code'], 'error_asr');
    } finally {
      await s.close();
    }
  });

  const MARKER = 'UPSTREAM-SECRET-7f3a';

  it('the LLM server fails with a body: the caller gets the code and a plain message, the log keeps the details', async () => {
    const llmServer = await fakeLlmServer((res) => {
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `internal: ${MARKER} key sk-live-xyz` } }));
    });
    const { logger, lines } = capturingLogger();
    const base = fakeProviders(['hello there']);
    const llm = new OpenAiChatLlm({ baseUrl: llmServer.baseUrl, model: 'm', timeoutMs: 2_000 });
    const s = await startMediaServer('sqlite', { providers: { ...base, llm }, logger });
    try {
      const created = await s.api('POST', '/create-service-llm', { general_prompt: 'Be brief.', begin_message: 'Hello, how can I help?' });
      const agent = await s.api('POST', '/create-agent', { response_engine: { type: 'service_llm', llm_id: created.json.llm_id } });
      const client = await s.call(agent.json.agent_id);
      await client.waitFor('agent_stop_talking', 5_000);
      void client.play(concat(tone(600), silence(800)));
      const end = await client.ended;
      assert.deepEqual([end.call_status, end.disconnection_reason, end.close_code], ['error', 'error_llm', 1011]);
      const errors = client.events.filter((e) => e.type === 'error');
      assert.deepEqual(errors.map((e) => [e['code'], e['message']]), [['error_llm', 'The language model failed; the call ends.']]);
      assert.ok(!JSON.stringify(client.events).includes(MARKER), 'no upstream text reaches the caller');
      const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
      assert.deepEqual([call.call_status, call.disconnection_reason], ['error', 'error_llm']);
      assert.ok(!JSON.stringify(call).includes(MARKER), 'nor the call object');
      const logged = lines.find((l) => l['msg'] === 'voice pipeline failed');
      assert.equal(logged?.['callId'], client.callId);
      assert.match(String(logged?.['detail']), new RegExp(MARKER));
    } finally {
      await s.close();
      await llmServer.close();
    }
  });

  it('the speech server fails with a body: error_tts, and the caller sees no upstream text', async () => {
    const ttsServer = await fakeLlmServer((res) => {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`speech backend exploded: ${MARKER}`);
    });
    const { logger, lines } = capturingLogger();
    const base = fakeProviders([]);
    const tts = new OpenAiSpeechTts({ baseUrl: ttsServer.baseUrl, model: 'tts-1', timeoutMs: 2_000 });
    const s = await startMediaServer('sqlite', { providers: { ...base, tts }, logger });
    try {
      const client = await s.call(await s.flowAgent(talker));
      const end = await client.ended;
      assert.deepEqual([end.call_status, end.disconnection_reason, end.close_code], ['error', 'error_tts', 1011]);
      const errors = client.events.filter((e) => e.type === 'error');
      assert.deepEqual(errors.map((e) => [e['code'], e['message']]), [['error_tts', 'Speech synthesis failed; the call ends.']]);
      assert.ok(!JSON.stringify(client.events).includes(MARKER), 'no upstream text reaches the caller');
      assert.ok(ttsServer.requests > 0);
      const logged = lines.find((l) => l['msg'] === 'voice pipeline failed');
      assert.equal(logged?.['callId'], client.callId);
      assert.match(String(logged?.['detail']), new RegExp(MARKER));
    } finally {
      await s.close();
      await ttsServer.close();
    }
  });

  for (const mode of ['stalls', 'streams garbage', 'answers HTML'] as const) {
    it(`the LLM server ${mode}: error_llm, and the call still gets an analysis`, async () => {
      const llmServer = await fakeLlmServer((res) => {
        if (mode === 'stalls') return; // never answers
        if (mode === 'streams garbage') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end('data: {"choices": [ {"delta": {"content": "Hel\n\ndata: }}}not json\n\n');
          return;
        }
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html>gateway</html>');
      });
      const base = fakeProviders(['hello there']);
      const llm = new OpenAiChatLlm({ baseUrl: llmServer.baseUrl, model: 'm', timeoutMs: 800 });
      const s = await startMediaServer('sqlite', { providers: { ...base, llm } });
      try {
        const created = await s.api('POST', '/create-service-llm', { general_prompt: 'Be brief.', begin_message: 'Hello, how can I help?' });
        const agent = await s.api('POST', '/create-agent', { response_engine: { type: 'service_llm', llm_id: created.json.llm_id } });
        const client = await s.call(agent.json.agent_id);
        await client.waitFor('agent_stop_talking', 5_000);
        void client.play(concat(tone(600), silence(800)));
        const end = await client.ended;
        assert.deepEqual([end.call_status, end.disconnection_reason, end.close_code], ['error', 'error_llm', 1011]);
        assert.equal(client.events.find((e) => e.type === 'error')?.['code'], 'error_llm');
        const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
        assert.equal(call.disconnection_reason, 'error_llm');
        assert.equal(call.call_analysis.call_successful, false);
        assert.match(call.call_analysis.call_summary, /error_llm/);
        assert.ok(llmServer.requests > 0);
      } finally {
        await s.close();
        await llmServer.close();
      }
    });
  }
});

async function fakeLlmServer(answer: (res: ServerResponse) => void) {
  const open = new Set<ServerResponse>();
  let requests = 0;
  const server = createServer((req, res) => {
    requests++;
    req.resume();
    req.on('end', () => {
      open.add(res);
      answer(res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    get requests() {
      return requests;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const res of open) res.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** SIGKILLs this process's descendants whose command starts with `name` (only processes this test started). */
function killDescendants(name: string): number {
  const parent = new Map<number, number>();
  const comm = new Map<number, string>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const m = /^(\d+) \((.*)\) \S+ (\d+)/.exec(stat);
      if (m) {
        parent.set(Number(m[1]), Number(m[3]));
        comm.set(Number(m[1]), m[2]!);
      }
    } catch {
      // the process ended meanwhile
    }
  }
  let killed = 0;
  for (const [pid, c] of comm) {
    if (!c.startsWith(name.slice(0, 15))) continue;
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) {
      if (p === process.pid) {
        process.kill(pid, 'SIGKILL');
        killed++;
        break;
      }
    }
  }
  return killed;
}
