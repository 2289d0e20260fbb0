// The hostile-peer suite, providers: local servers speaking the OpenAI-compatible chat,
// transcription and speech protocols and Deepgram's live protocol send JSON nested 20,000 deep,
// fields of the wrong type, events with no end, gigantic error bodies, stalls and abrupt closes.
// Each provider fails with a ProviderError of its kind (which ends a call `error_llm`,
// `error_asr` or `error_tts`), within its time bound, reading a bounded amount; none throws
// anything else, and a call on a hostile provider ends with the provider's reason while another
// call on the same server goes on.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { WebSocketServer, type WebSocket } from 'ws';
import { OpenAiChatLlm } from '../../src/providers/openai/chat.llm.ts';
import { OpenAiTranscriptionStt } from '../../src/providers/openai/transcription.stt.ts';
import { OpenAiSpeechTts } from '../../src/providers/openai/speech.tts.ts';
import { DeepgramStt } from '../../src/providers/deepgram/deepgram.stt.ts';
import { ProviderError } from '../../src/providers/errors.ts';
import { EnergyVad, FakeTts } from '../../src/providers/fake/fake.providers.ts';
import { type MediaServer, concat, silence, startMediaServer, tone } from '../media/helpers.ts';
import { deepArray } from './helpers.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A hostile HTTP server on 127.0.0.1: `handler` answers each request after its body is read. */
async function httpServer(handler: Handler): Promise<{ baseUrl: string; close: () => Promise<void> }> {
  const s = createServer((req, res) => {
    req.resume();
    req.on('end', () => handler(req, res));
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(s.address() as AddressInfo).port}/v1`,
    close: () =>
      new Promise((resolve) => {
        s.closeAllConnections();
        s.close(() => resolve());
      }),
  };
}

/** Streams `total` bytes of `fill` in 64 KB writes, as fast as the socket takes them (stops when the client goes). */
function stream(res: ServerResponse, total: number, fill = 'x'): void {
  const block = Buffer.alloc(65_536, fill);
  let sent = 0;
  const write = (): void => {
    while (sent < total && !res.destroyed) {
      sent += block.length;
      if (!res.write(block)) return void res.once('drain', write);
    }
    res.end();
  };
  write();
}

/** Runs `fn` and says how long it took and what it threw. */
async function outcome(fn: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const t0 = performance.now();
  try {
    await fn();
    return { error: undefined, ms: performance.now() - t0 };
  } catch (error) {
    return { error, ms: performance.now() - t0 };
  }
}

function assertProviderError(error: unknown, kind: string, pattern: RegExp): void {
  assert.ok(error instanceof ProviderError, `a ProviderError, not ${String(error)}`);
  assert.equal(error.kind, kind);
  assert.match(error.message, pattern);
}

async function drain(llm: OpenAiChatLlm): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const d of llm.chat({ messages: [{ role: 'user', content: 'hi' }] })) out.push(d);
  return out;
}

describe('a hostile OpenAI-compatible chat server', () => {
  const sse = (res: ServerResponse, ...events: string[]) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const e of events) res.write(`data: ${e}\n\n`);
    res.end('data: [DONE]\n\n');
  };

  it('a stream chunk nested 20,000 deep is a malformed chunk', async () => {
    const srv = await httpServer((_req, res) => sse(res, `{"choices":[{"delta":{"content":${deepArray(20_000)}}}]}`));
    try {
      const { error } = await outcome(() => drain(new OpenAiChatLlm({ baseUrl: srv.baseUrl, model: 'm' })));
      assertProviderError(error, 'llm', /malformed stream chunk \(it nests more than 64 levels deep\)/);
    } finally {
      await srv.close();
    }
  });

  it('fields of the wrong type are checked, never used: content as an object is skipped, a tool call that is null is malformed', async () => {
    const srv = await httpServer((req, res) =>
      req.url?.includes('wrong') ? sse(res, '{"choices":[{"delta":{"tool_calls":[null]}}]}') : sse(res, '{"choices":[{"delta":{"content":{"a":1}}}]}', '{"choices":"no"}', '{"choices":[{"delta":{"content":"Fine."},"finish_reason":7}]}'),
    );
    try {
      const out = await drain(new OpenAiChatLlm({ baseUrl: srv.baseUrl, model: 'm' }));
      assert.deepEqual(out, [{ type: 'text', text: 'Fine.' }, { type: 'done', finishReason: 'stop' }]);
      const { error } = await outcome(() => drain(new OpenAiChatLlm({ baseUrl: `${srv.baseUrl}/wrong`, model: 'm' })));
      assertProviderError(error, 'llm', /malformed tool call/);
    } finally {
      await srv.close();
    }
  });

  it('an event that never ends (8 MB with no blank line) fails at 1 MB, not at the end of memory', async () => {
    const srv = await httpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: ');
      stream(res, 8 * 1_048_576);
    });
    try {
      const { error } = await outcome(() => drain(new OpenAiChatLlm({ baseUrl: srv.baseUrl, model: 'm' })));
      assertProviderError(error, 'llm', /a stream event longer than 1048576 characters/);
    } finally {
      await srv.close();
    }
  });

  it('tool-call arguments streamed past 64 KB are a broken answer', async () => {
    const piece = JSON.stringify({ choices: [{ delta: { tool_calls: [{ index: 0, id: 'c', function: { name: 'f', arguments: 'x'.repeat(30_000) } }] } }] });
    const srv = await httpServer((_req, res) => sse(res, piece, piece, piece));
    try {
      const { error } = await outcome(() => drain(new OpenAiChatLlm({ baseUrl: srv.baseUrl, model: 'm' })));
      assertProviderError(error, 'llm', /arguments longer than 65536/);
    } finally {
      await srv.close();
    }
  });

  it('an error answer of 64 MB is read for its first bytes only', async () => {
    const srv = await httpServer((_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      stream(res, 64 * 1_048_576, 'e');
    });
    try {
      const { error, ms } = await outcome(() => drain(new OpenAiChatLlm({ baseUrl: srv.baseUrl, model: 'm', maxRetries: 0 })));
      assertProviderError(error, 'llm', /^openai-chat: HTTP 500: e{10}/);
      assert.ok((error as Error).message.length < 300, 'the message quotes at most 200 characters of the body');
      assert.ok(ms < 2_000, `took ${ms.toFixed(0)} ms`);
    } finally {
      await srv.close();
    }
  });

  it('a stream that stalls after its headers, and one cut off mid-event, fail within the request timeout', async () => {
    const srv = await httpServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n');
      if (req.url?.includes('cut')) setTimeout(() => res.socket?.destroy(), 50);
    });
    try {
      const stalled = await outcome(() => drain(new OpenAiChatLlm({ baseUrl: srv.baseUrl, model: 'm', timeoutMs: 600 })));
      assertProviderError(stalled.error, 'llm', /stream interrupted/);
      assert.ok(stalled.ms < 2_000, `a stall took ${stalled.ms.toFixed(0)} ms`);
      const cut = await outcome(() => drain(new OpenAiChatLlm({ baseUrl: `${srv.baseUrl}/cut`, model: 'm' })));
      assertProviderError(cut.error, 'llm', /stream interrupted/);
    } finally {
      await srv.close();
    }
  });
});

describe('a hostile OpenAI-compatible transcription and speech server', () => {
  const speech = new Int16Array(16_000).fill(1000);

  it('transcription: an answer nested 20,000 deep, text of the wrong type, and an 8 MB answer are refused', async () => {
    const srv = await httpServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url?.includes('deep')) res.end(`{"text":${deepArray(20_000)}}`);
      else if (req.url?.includes('type')) res.end('{"text":{"toString":"x"}}');
      else stream(res, 8 * 1_048_576);
    });
    try {
      for (const [path, pattern] of [['deep', /response has no text/], ['type', /response has no text/], ['huge', /answer larger than 1048576 bytes/]] as const) {
        const stt = new OpenAiTranscriptionStt({ baseUrl: `${srv.baseUrl}/${path}`, model: 'whisper-1', maxRetries: 0 });
        const { error } = await outcome(() => stt.transcribe(speech));
        assertProviderError(error, 'asr', pattern);
      }
    } finally {
      await srv.close();
    }
  });

  it('speech: a WAV answer whose data never begins is refused after 64 KB', async () => {
    const srv = await httpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/wav' });
      const header = Buffer.alloc(12);
      header.write('RIFF', 0, 'latin1');
      header.writeUInt32LE(0xffffffff, 4);
      header.write('WAVE', 8, 'latin1');
      res.write(header);
      // An endless chunk that is not `data`.
      const chunk = Buffer.alloc(8);
      chunk.write('junk', 0, 'latin1');
      chunk.writeUInt32LE(0x7fffffff, 4);
      res.write(chunk);
      stream(res, 4 * 1_048_576);
    });
    try {
      const tts = new OpenAiSpeechTts({ baseUrl: srv.baseUrl, model: 'tts-1', responseFormat: 'wav' });
      const { error } = await outcome(async () => {
        for await (const _ of tts.synthesize('Hello there.')) void _;
      });
      assert.ok(error instanceof ProviderError && error.kind === 'tts', `a tts ProviderError, not ${String(error)}`);
    } finally {
      await srv.close();
    }
  });
});

/** A Deepgram-style server that answers every Finalize with what `answer` returns (raw text frames), or acts itself. */
async function hostileDeepgram(answer: (ws: WebSocket) => void): Promise<{ url: string; close: () => Promise<void> }> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  wss.on('connection', (ws) => {
    ws.on('error', () => {});
    ws.on('message', (data, binary) => {
      if (!binary && (data as Buffer).toString('utf8').includes('Finalize')) answer(ws);
    });
  });
  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/v1/listen`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of wss.clients) c.terminate();
        wss.close(() => resolve());
      }),
  };
}

const finalizeAnswer = (transcript: string) => `{"type":"Results","is_final":true,"from_finalize":true,"channel":{"alternatives":[{"transcript":${transcript}}]}}`;

describe('a hostile Deepgram-style server', () => {
  it('messages nested 20,000 deep and transcripts of the wrong type are ignored; the Finalize answer still ends the utterance', async () => {
    const srv = await hostileDeepgram((ws) => {
      ws.send(`{"type":"Results","channel":${deepArray(20_000)}}`);
      ws.send('{"type":"Results","is_final":true,"channel":{"alternatives":[{"transcript":42}]}}');
      ws.send('{"type":"Results","is_final":true,"channel":{"alternatives":"nope"}}');
      ws.send(finalizeAnswer('"hello"'));
    });
    try {
      const s = await new DeepgramStt({ url: srv.url }).openStream();
      s.write(new Int16Array(3200));
      assert.equal((await s.finalize()).text, 'hello');
      await s.close();
    } finally {
      await srv.close();
    }
  });

  it('a stall is bounded by the finalize timeout: the utterance is what arrived by then', async () => {
    const srv = await hostileDeepgram(() => {});
    try {
      const s = await new DeepgramStt({ url: srv.url, finalizeTimeoutMs: 500 }).openStream();
      s.write(new Int16Array(3200));
      const { error, ms } = await outcome(async () => assert.equal((await s.finalize()).text, ''));
      assert.equal(error, undefined);
      assert.ok(ms < 1_500, `took ${ms.toFixed(0)} ms`);
      await s.close();
    } finally {
      await srv.close();
    }
  });

  it('a 2 MB message and an abrupt close each fail the utterance with an asr error', async () => {
    for (const [name, behave] of [
      ['a 2 MB message', (ws: WebSocket) => ws.send(finalizeAnswer(JSON.stringify('x'.repeat(2 * 1_048_576))))],
      ['an abrupt close', (ws: WebSocket) => ws.terminate()],
    ] as const) {
      const srv = await hostileDeepgram(behave);
      try {
        const s = await new DeepgramStt({ url: srv.url, finalizeTimeoutMs: 500 }).openStream();
        s.write(new Int16Array(3200));
        const { error, ms } = await outcome(() => s.finalize());
        assert.ok(error instanceof ProviderError && error.kind === 'asr', `${name}: a asr ProviderError, not ${String(error)}`);
        assert.ok(ms < 2_000, `${name}: took ${ms.toFixed(0)} ms`);
        await s.close();
      } finally {
        await srv.close();
      }
    }
  });
});

describe('a call on a hostile recogniser ends error_asr; another call on the same server goes on', () => {
  let s: MediaServer;
  let dg: { url: string; close: () => Promise<void> };
  before(async () => {
    dg = await hostileDeepgram((ws) => {
      ws.send(`{"type":"Results","is_final":true,"channel":${deepArray(20_000)}}`);
      ws.send(finalizeAnswer(JSON.stringify('x'.repeat(2 * 1_048_576))));
    });
  });
  after(async () => {
    await s?.close();
    await dg?.close();
  });

  it('the recogniser answers an utterance with a message nested 20,000 deep, then one of 2 MB', { timeout: 30_000 }, async () => {
    // The hostile recogniser serves calls; the fakes stand in for the rest.
    const stt = new DeepgramStt({ url: dg.url, finalizeTimeoutMs: 1_000 });
    s = await startMediaServer('sqlite', { providers: { stt, tts: new FakeTts({ msPerChar: 2 }), vad: new EnergyVad(), llm: undefined, async close() {} } });
    const agentId = await s.flowAgent({
      start_node_id: 'hi',
      nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello.' } }],
    });
    const other = await s.call(agentId);
    const victim = await s.call(agentId);
    await victim.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
    await victim.play(concat(tone(600), silence(900)));
    const end = await victim.ended;
    // The deep message is ignored; the 2 MB one is over the bound: the recogniser's stream fails.
    assert.equal(end.disconnection_reason, 'error_asr');
    assert.ok((await other.ping()) < 2_000, 'the other call answers');
    assert.equal((await other.hangup()).disconnection_reason, 'user_hangup');
  });
});
