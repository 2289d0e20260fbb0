// AssemblyAI Universal-Streaming recognition (issue 25, item 6) against a local server speaking its
// v3 WebSocket protocol; the contract every recogniser keeps is in stt-conformance.test.ts. Here:
// the connection's parameters and key, a turn the server ends by itself joined with the forced
// one, Terminate at close, and failures mapped onto asr provider errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocketServer, type WebSocket } from 'ws';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AssemblyAiStt } from '../../src/providers/assemblyai/assemblyai.stt.ts';
import { ProviderError } from '../../src/providers/errors.ts';

/** Each 0.2 s of audio is heard as the next word of `script`; `endAfter` words end a turn by the server's own choice. */
async function fakeAssemblyAi(script: string[], options: { endAfter?: number; closeWith?: number } = {}) {
  const http = createServer();
  const wss = new WebSocketServer({ noServer: true });
  const seen = { query: new URLSearchParams(), auth: '', messages: [] as string[] };
  http.on('upgrade', (req, socket, head) => {
    if (req.headers.authorization === 'refused') {
      socket.end('HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    seen.query = new URL(req.url ?? '', 'http://x').searchParams;
    seen.auth = String(req.headers.authorization);
    wss.handleUpgrade(req, socket, head, (ws) => serve(ws));
  });
  const serve = (ws: WebSocket): void => {
    ws.send(JSON.stringify({ type: 'Begin', id: 'sess', expires_at: 1_900_000_000 }));
    let bytes = 0;
    let order = 0;
    let words: Array<{ text: string; start: number }> = [];
    const turn = (end: boolean) =>
      ws.send(JSON.stringify({ type: 'Turn', turn_order: order, end_of_turn: end, turn_is_formatted: false, end_of_turn_confidence: end ? 0.9 : 0.1, transcript: words.map((w) => w.text).join(' '), utterance: '', words: words.map((w) => ({ ...w, end: w.start + 200, confidence: 0.9, word_is_final: true })) }));
    const endTurn = () => {
      turn(true);
      order++;
      words = [];
    };
    ws.on('message', (data, isBinary) => {
      if (isBinary) {
        const before = Math.floor(bytes / 6400);
        bytes += (data as Buffer).length;
        for (let k = before; k < Math.floor(bytes / 6400); k++) {
          if (options.closeWith) {
            ws.close(options.closeWith, 'Unauthorized connection');
            return;
          }
          words.push({ text: script.shift() ?? '', start: k * 200 });
          turn(false);
          if (options.endAfter && words.length === options.endAfter) endTurn();
        }
        return;
      }
      const m = JSON.parse((data as Buffer).toString('utf8')) as { type: string };
      seen.messages.push(m.type);
      if (m.type === 'ForceEndpoint' && words.length > 0) endTurn();
      if (m.type === 'Terminate') {
        ws.send(JSON.stringify({ type: 'Termination', audio_duration_seconds: bytes / 32000, session_duration_seconds: 1 }));
        ws.close(1000);
      }
    });
  };
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const { port } = http.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}/v3/ws`,
    seen,
    close: () => new Promise<void>((r) => { for (const c of wss.clients) c.terminate(); http.close(() => r()); http.closeAllConnections(); }),
  };
}

const speech = (ms: number) => new Int16Array((ms * 16000) / 1000).fill(1000);

test('assemblyai: connects with its parameters and key; a turn the server ended itself joins the forced one; Terminate at close', async () => {
  const srv = await fakeAssemblyAi(['i', 'would', 'like', 'support'], { endAfter: 2 });
  try {
    const interims: string[] = [];
    const s = await new AssemblyAiStt({ url: srv.url, apiKey: 'aai-key' }).openStream({ keywords: ['support', 'sales'], onInterim: (i) => interims.push(i.text) });
    assert.equal(srv.seen.auth, 'aai-key', 'the bare key in Authorization');
    assert.equal(srv.seen.query.get('sample_rate'), '16000');
    assert.equal(srv.seen.query.get('encoding'), 'pcm_s16le');
    assert.equal(srv.seen.query.get('speech_model'), 'universal-streaming-english');
    assert.deepEqual(JSON.parse(srv.seen.query.get('keyterms_prompt') ?? '[]'), ['support', 'sales']);
    s.write(speech(800));
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await s.finalize()).text, 'i would like support', 'the turn the server ended (i would), then the forced one');
    assert.equal(interims.at(-1), 'i would like support');
    assert.deepEqual(srv.seen.messages, ['ForceEndpoint']);
    await s.close();
    await s.close();
    assert.deepEqual(srv.seen.messages, ['ForceEndpoint', 'Terminate'], 'the session is ended (AssemblyAI bills an open one)');
  } finally {
    await srv.close();
  }
});

test('assemblyai: 8 kHz audio is sent as it is, its cut measured at that rate', async () => {
  const srv = await fakeAssemblyAi(['yes']);
  try {
    const s = await new AssemblyAiStt({ url: srv.url }).openStream({ sampleRateHz: 8000 });
    assert.equal(srv.seen.query.get('sample_rate'), '8000');
    s.write(new Int16Array(3200).fill(1000));
    assert.equal((await s.finalize()).text, 'yes');
    await s.close();
  } finally {
    await srv.close();
  }
});

test('assemblyai: failures map onto asr provider errors (key refused, session closed by policy, server error, unreachable)', async () => {
  const srv = await fakeAssemblyAi([]);
  const policy = await fakeAssemblyAi([], { closeWith: 1008 });
  const broken = await fakeAssemblyAi([], { closeWith: 1011 });
  const is = (status: number | undefined, retryable: boolean, message: RegExp) => (e: unknown) =>
    e instanceof ProviderError && e.kind === 'asr' && e.provider === 'assemblyai' && e.status === status && e.retryable === retryable && message.test(e.message);
  try {
    await assert.rejects(new AssemblyAiStt({ url: srv.url, apiKey: 'refused' }).openStream(), is(401, false, /handshake refused \(HTTP 401: check the API key\)/));
    for (const [server, code, retryable] of [[policy, 1008, false], [broken, 1011, true]] as const) {
      const s = await new AssemblyAiStt({ url: server.url }).openStream();
      s.write(speech(200));
      await assert.rejects(s.finalize(), is(undefined, retryable, new RegExp(`closed by the server \\(${code}: Unauthorized connection\\)`)));
      await s.close();
    }
    await assert.rejects(new AssemblyAiStt({ url: 'ws://127.0.0.1:9/v3/ws', connectTimeoutMs: 2000 }).openStream(), is(undefined, true, /connection failed/));
  } finally {
    await Promise.all([srv.close(), policy.close(), broken.close()]);
  }
});

test('assemblyai: each utterance\'s words with their times (the Turn messages\' ms), moved to the start of the utterance\'s own audio; a turn the server ended itself keeps its words', async () => {
  const srv = await fakeAssemblyAi(['i', 'would', 'like', 'support', 'yes', 'please'], { endAfter: 2 });
  try {
    const s = await new AssemblyAiStt({ url: srv.url }).openStream();
    s.write(speech(800));
    await new Promise((r) => setTimeout(r, 100));
    const first = await s.finalize();
    assert.equal(first.text, 'i would like support');
    assert.deepEqual(first.words, [{ word: 'i', startMs: 0, endMs: 200 }, { word: 'would', startMs: 200, endMs: 400 }, { word: 'like', startMs: 400, endMs: 600 }, { word: 'support', startMs: 600, endMs: 800 }]);
    // The stream's times run on from the first utterance: 800-1200 ms is 0-400 ms of the second.
    s.write(speech(400));
    await new Promise((r) => setTimeout(r, 100));
    const second = await s.finalize();
    assert.equal(second.text, 'yes please');
    assert.deepEqual(second.words, [{ word: 'yes', startMs: 0, endMs: 200 }, { word: 'please', startMs: 200, endMs: 400 }]);
    await s.close();
  } finally {
    await srv.close();
  }
});
