// One contract for every recogniser (src/providers/stt.ts): each SttProvider runs the same cases
// against a real engine: PocketSphinx (the binary, on Flite speech), OpenAI-compatible
// transcription, Deepgram-style and AssemblyAI streaming (local servers speaking their protocols, whose
// "recognition" reads the utterance's identity from its audio), and the scripted fake.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, afterEach, beforeEach, describe, it } from 'node:test';
import { WebSocketServer, type WebSocket } from 'ws';
import { AssemblyAiStt } from '../../src/providers/assemblyai/assemblyai.stt.ts';
import { DeepgramStt } from '../../src/providers/deepgram/deepgram.stt.ts';
import { ProviderError } from '../../src/providers/errors.ts';
import { FakeStt } from '../../src/providers/fake/fake.providers.ts';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { OpenAiTranscriptionStt } from '../../src/providers/openai/transcription.stt.ts';
import { DecoderPool } from '../../src/providers/pocketsphinx/decoder-pool.ts';
import { PocketsphinxStt, probeLibrary } from '../../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import { decodeWav } from '../../src/lib/wav.ts';
import type { SttProvider, SttResult, SttStream } from '../../src/providers/stt.ts';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../voice/capabilities.ts';
import { concat, silence } from '../voice/harness.ts';

/** A recogniser under test, fresh for each case. */
interface Engine {
  provider: SttProvider;
  /** Audio of the i-th test utterance (i in 0..2). */
  audio(i: number): Int16Array;
  /** Whether `text` is what this engine should recognise for utterance i. */
  heard(i: number, text: string): boolean;
  /** Whether the engine hears audio at all (the fake does not: it only counts samples). */
  hearsSilence: boolean;
  /** Whether the engine streams interim hypotheses (SttOpenOptions.onInterim) of a written utterance. */
  interims: boolean;
  /** The engine dies (process killed, socket dropped, server failing) while work is pending. */
  kill(): Promise<void> | void;
  /** True once the engine holds nothing for closed streams (no process, socket or request left). */
  released(): boolean;
  close(): Promise<void>;
}

interface Driver {
  name: string;
  skip: string | false;
  start(): Promise<Engine>;
}

/** Settles within `ms` or fails the case: a recogniser must never leave a finalize pending forever. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

/** Polls real I/O (a process exiting, a socket closing) until `check` holds or `ms` pass. */
async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

function isAsrError(e: unknown): boolean {
  return e instanceof ProviderError && e.kind === 'asr';
}

// ---- PocketSphinx: the real binary on Flite speech ----

const PHRASES = ['i would like to buy something', 'i need help with support', 'good morning'];
const KEYWORDS = ['buy', 'support', 'morning'];
let speechCache: Int16Array[] | undefined;

async function fliteSpeech(): Promise<Int16Array[]> {
  if (speechCache) return speechCache;
  const tts = new FliteTts();
  try {
    const out: Int16Array[] = [];
    for (const phrase of PHRASES) {
      const parts: Int16Array[] = [];
      for await (const c of tts.synthesize(phrase, { voiceId: 'flite-kal16' })) parts.push(c);
      out.push(concat(silence(200), ...parts, silence(300)));
    }
    speechCache = out;
    return out;
  } finally {
    await tts.close();
  }
}

/** Processes descending from this test process (decoders and their shell and cat). */
function descendants(): number[] {
  const parent = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z') parent.set(Number(entry), Number(fields[1]));
    } catch {
      // the process ended while we looked
    }
  }
  const out: number[] = [];
  const walk = (pid: number): void => {
    for (const [child, ppid] of parent) {
      if (ppid === pid) {
        out.push(child);
        walk(child);
      }
    }
  };
  walk(process.pid);
  return out;
}

const pocketsphinx: Driver = {
  name: 'pocketsphinx (process per utterance)',
  skip: hasPocketsphinx() ? false : NO_POCKETSPHINX,
  async start() {
    const speech = await fliteSpeech();
    return {
      provider: new PocketsphinxStt({ mode: 'process' }),
      audio: (i) => speech[i]!,
      heard: (i, text) => text.split(' ').includes(KEYWORDS[i]!),
      hearsSilence: true,
      interims: false,
      kill() {
        for (const pid of descendants()) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
      },
      released: () => descendants().length === 0 && !process.getActiveResourcesInfo().includes('ProcessWrap'),
      async close() {},
    };
  },
};

const library = probeLibrary();

const pocketsphinxLibrary: Driver = {
  name: 'pocketsphinx (library, streaming)',
  skip: !hasPocketsphinx() ? NO_POCKETSPHINX : library.ok ? false : `libpocketsphinx cannot be called in-process here (${library.why})`,
  async start() {
    const speech = await fliteSpeech();
    const decoders = new DecoderPool();
    const provider = new PocketsphinxStt({ mode: 'library', decoders });
    return {
      provider,
      audio: (i) => speech[i]!,
      heard: (i, text) => text.split(' ').includes(KEYWORDS[i]!),
      hearsSilence: true,
      interims: true,
      kill: () => decoders.terminateAll(),
      released: () => decoders.leased === 0 && decoders.streams === 0,
      async close() {},
    };
  },
};

// ---- The protocol servers: the utterance's identity is in its audio ----

/** Audio of test utterance i: 0.4 s at a constant level 1000 * (i + 1), which the servers read back. */
function levelAudio(i: number): Int16Array {
  return new Int16Array(6400).fill(1000 * (i + 1));
}

/** What the servers "recognise" in a piece of audio: `word<level>` for each level heard, '' for silence. */
function wordsOf(samples: Int16Array): string {
  const words: string[] = [];
  for (const s of samples) {
    if (s === 0) continue;
    const w = `word${s / 1000}`;
    if (words.at(-1) !== w) words.push(w);
  }
  return words.join(' ');
}

function heardLevel(i: number, text: string): boolean {
  const words = text.split(' ').filter(Boolean);
  return words.length > 0 && words.every((w) => w === `word${i + 1}`);
}

/**
 * Deepgram's live protocol: binary linear16 up; every 0.2 s of audio one interim and one final
 * segment; `Finalize` flushes the rest in a Results message marked `from_finalize`.
 */
async function deepgramServer() {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const sockets = new Set<WebSocket>();
  const results = (ws: WebSocket, samples: Int16Array, extra: Record<string, boolean>) =>
    ws.send(JSON.stringify({ type: 'Results', is_final: true, speech_final: false, ...extra, channel: { alternatives: [{ transcript: wordsOf(samples) }] } }));
  wss.on('connection', (ws) => {
    sockets.add(ws);
    ws.on('close', () => sockets.delete(ws));
    let pending = Buffer.alloc(0);
    ws.on('message', (data, isBinary) => {
      const buf = data as Buffer;
      if (isBinary) {
        pending = Buffer.concat([pending, buf]);
        while (pending.length >= 6400) {
          const chunk = new Int16Array(new Uint8Array(pending.subarray(0, 6400)).buffer);
          pending = pending.subarray(6400);
          ws.send(JSON.stringify({ type: 'Results', is_final: false, channel: { alternatives: [{ transcript: `${wordsOf(chunk)}…` }] } }));
          results(ws, chunk, {});
        }
        return;
      }
      const m = JSON.parse(buf.toString('utf8')) as { type: string };
      if (m.type === 'Finalize') {
        const rest = new Int16Array(new Uint8Array(pending).buffer);
        pending = Buffer.alloc(0);
        results(ws, rest, { speech_final: true, from_finalize: true });
      }
      if (m.type === 'CloseStream') ws.close(1000);
    });
  });
  const port = (wss.address() as AddressInfo).port;
  return {
    url: `ws://127.0.0.1:${port}/v1/listen`,
    sockets,
    kill: () => {
      for (const ws of sockets) ws.terminate();
      wss.close();
    },
    close: () => {
      for (const ws of sockets) ws.terminate();
      return new Promise<void>((r) => wss.close(() => r()));
    },
  };
}

const deepgram: Driver = {
  name: 'deepgram',
  skip: false,
  async start() {
    const srv = await deepgramServer();
    return {
      provider: new DeepgramStt({ url: srv.url, apiKey: 'dg-test' }),
      audio: levelAudio,
      heard: heardLevel,
      hearsSilence: true,
      interims: true,
      kill: () => srv.kill(),
      released: () => srv.sockets.size === 0,
      close: () => srv.close(),
    };
  },
};

/**
 * AssemblyAI's Universal-Streaming (v3) protocol: `Begin`; binary pcm_s16le up; every 0.2 s of
 * audio a `Turn` (end_of_turn false) with its words so far; `ForceEndpoint` ends the turn with a
 * `Turn` (end_of_turn true) of all its words, and nothing when no turn is in progress;
 * `Terminate` answers `Termination` and closes.
 */
async function assemblyAiServer() {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const sockets = new Set<WebSocket>();
  wss.on('connection', (ws) => {
    sockets.add(ws);
    ws.on('close', () => sockets.delete(ws));
    ws.send(JSON.stringify({ type: 'Begin', id: 'session', expires_at: 0 }));
    let pending = Buffer.alloc(0);
    /** Audio received, ms: where each word starts. */
    let atMs = 0;
    let order = 0;
    let words: Array<{ text: string; start: number }> = [];
    const turn = (endOfTurn: boolean) =>
      ws.send(JSON.stringify({
        type: 'Turn', turn_order: order, turn_is_formatted: false, end_of_turn: endOfTurn,
        transcript: (endOfTurn ? words : words.slice(0, -1)).map((w) => w.text).join(' '),
        words: words.map((w, i) => ({ text: w.text, start: w.start, end: w.start + 200, confidence: 0.9, word_is_final: endOfTurn || i < words.length - 1 })),
      }));
    const hear = (bytes: Buffer): void => {
      const heard = wordsOf(new Int16Array(new Uint8Array(bytes).buffer));
      if (heard) words.push(...heard.split(' ').map((text) => ({ text, start: atMs })));
      atMs += bytes.length / 32;
    };
    ws.on('message', (data, isBinary) => {
      const buf = data as Buffer;
      if (isBinary) {
        pending = Buffer.concat([pending, buf]);
        while (pending.length >= 6400) {
          const before = words.length;
          hear(pending.subarray(0, 6400));
          pending = pending.subarray(6400);
          if (words.length > before) turn(false);
        }
        return;
      }
      const m = JSON.parse(buf.toString('utf8')) as { type: string };
      if (m.type === 'ForceEndpoint') {
        hear(pending);
        pending = Buffer.alloc(0);
        if (words.length === 0) return;
        turn(true);
        order++;
        words = [];
      }
      if (m.type === 'Terminate') {
        ws.send(JSON.stringify({ type: 'Termination', audio_duration_seconds: 1, session_duration_seconds: 1 }));
        ws.close(1000);
      }
    });
  });
  const port = (wss.address() as AddressInfo).port;
  return {
    url: `ws://127.0.0.1:${port}/v3/ws`,
    sockets,
    kill: () => {
      for (const ws of sockets) ws.terminate();
      wss.close();
    },
    close: () => {
      for (const ws of sockets) ws.terminate();
      return new Promise<void>((r) => wss.close(() => r()));
    },
  };
}

const assemblyai: Driver = {
  name: 'assemblyai',
  skip: false,
  async start() {
    const srv = await assemblyAiServer();
    return {
      provider: new AssemblyAiStt({ url: srv.url, apiKey: 'aai-test', quietWaitMs: 200 }),
      audio: levelAudio,
      heard: heardLevel,
      hearsSilence: true,
      interims: true,
      kill: () => srv.kill(),
      released: () => srv.sockets.size === 0,
      close: () => srv.close(),
    };
  },
};

/** POST /v1/audio/transcriptions: reads the WAV out of the multipart body and answers {text}. */
async function openAiServer() {
  let broken = false;
  const inFlight = new Set<ServerResponse>();
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    inFlight.add(res);
    res.on('close', () => inFlight.delete(res));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (broken) {
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"engine down"}}');
        return;
      }
      const body = Buffer.concat(chunks);
      const riff = body.indexOf('RIFF');
      const wav = decodeWav(new Uint8Array(body.subarray(riff)));
      // Answer a little later, as a real service would: finalizes overlap.
      setTimeout(() => {
        if (!res.writableEnded && !res.destroyed) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ text: wordsOf(wav.samples) }));
      }, 30);
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    inFlight,
    kill: () => {
      broken = true;
      for (const s of sockets) s.destroy();
    },
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

const openai: Driver = {
  name: 'openai-transcription',
  skip: false,
  async start() {
    const srv = await openAiServer();
    return {
      provider: new OpenAiTranscriptionStt({ baseUrl: srv.baseUrl, apiKey: 'sk-test', model: 'whisper-1', maxRetries: 1 }),
      audio: levelAudio,
      heard: heardLevel,
      hearsSilence: true,
      interims: false,
      kill: () => srv.kill(),
      released: () => srv.inFlight.size === 0,
      close: () => srv.close(),
    };
  },
};

// ---- The fake: answers a macrotask later, so finalizes can be pending ----

const SCRIPT = ['first utterance', 'second utterance', 'third utterance'];

const fake: Driver = {
  name: 'fake',
  skip: false,
  async start() {
    const stt = new FakeStt(SCRIPT, { interims: true });
    stt.hold();
    const provider: SttProvider = {
      id: stt.id,
      languages: () => stt.languages(),
      async openStream(options) {
        const s = await stt.openStream(options);
        return {
          write: (pcm) => s.write(pcm),
          finalize(signal) {
            const answer = s.finalize(signal);
            setImmediate(() => {
              stt.release();
              stt.hold();
            });
            return answer;
          },
          close: () => s.close(),
        };
      },
    };
    return {
      provider,
      audio: () => new Int16Array(3200).fill(500),
      // The fake hands out its script in finalize order; the cases finalize utterances in index order.
      heard: (i, text) => text === SCRIPT[i],
      hearsSilence: false,
      interims: true,
      kill: () => stt.fail('engine died'),
      released: () => true,
      async close() {},
    };
  },
};

// ---- The contract ----

// Generous: the embedded decoders share two cores with other work, and a recogniser that hangs still fails.
const LIMIT_MS = 30_000;

for (const driver of [pocketsphinxLibrary, pocketsphinx, openai, deepgram, assemblyai, fake]) {
  describe(`SttStream conformance: ${driver.name}`, { skip: driver.skip }, () => {
    let engine: Engine;
    let stream: SttStream | undefined;
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on('unhandledRejection', onUnhandled);
    after(() => {
      process.off('unhandledRejection', onUnhandled);
    });

    beforeEach(async () => {
      engine = await driver.start();
      unhandled.length = 0;
    });
    afterEach(async () => {
      await stream?.close();
      stream = undefined;
      await engine.provider.close?.();
      await engine.close();
      // Let rejections nobody handled surface before judging.
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(unhandled, [], 'no unhandled rejections');
    });

    const open = async () => (stream = await engine.provider.openStream());
    const text = async (p: Promise<SttResult>, what: string) => (await within(p, LIMIT_MS, what)).text;

    it('recognises utterances one after another, each with its own text', async () => {
      const s = await open();
      for (const i of [0, 1, 2]) {
        s.write(engine.audio(i));
        const t = await text(s.finalize(), `finalize ${i}`);
        assert.ok(engine.heard(i, t), `utterance ${i} heard as ${JSON.stringify(t)}`);
      }
    });

    it('overlap: audio of the next utterance is written while the previous one finalizes', async () => {
      const s = await open();
      const pending: Array<Promise<SttResult>> = [];
      for (const i of [0, 1, 2]) {
        s.write(engine.audio(i));
        pending.push(s.finalize());
      }
      const texts = await Promise.all(pending.map((p, i) => text(p, `finalize ${i}`)));
      for (const [i, t] of texts.entries()) assert.ok(engine.heard(i, t), `utterance ${i} heard as ${JSON.stringify(t)}`);
    });

    it('two finalizes back to back before the first answer: the first gets the utterance, the second ""', async () => {
      const s = await open();
      s.write(engine.audio(0));
      const first = s.finalize();
      const second = s.finalize();
      const [a, b] = await Promise.all([text(first, 'first finalize'), text(second, 'second finalize')]);
      assert.ok(engine.heard(0, a), `the first got ${JSON.stringify(a)}`);
      assert.equal(b, '');
      s.write(engine.audio(1));
      const c = await text(s.finalize(), 'next finalize');
      assert.ok(engine.heard(1, c), `the next utterance got ${JSON.stringify(c)}`);
    });

    it('interim hypotheses: streaming engines report the utterance being written, never after its finalize', async () => {
      const interims: string[] = [];
      let finalizing = false;
      let late = 0;
      const s = (stream = await engine.provider.openStream({
        onInterim: ({ text }) => {
          interims.push(text);
          if (finalizing) late++;
        },
      }));
      // Written in 20 ms chunks, as a call does.
      const audio = engine.audio(0);
      for (let o = 0; o < audio.length; o += 320) s.write(audio.subarray(o, o + 320));
      if (engine.interims) assert.ok(await until(() => interims.length > 0, LIMIT_MS), 'an interim hypothesis arrived while the utterance was open');
      finalizing = true;
      const t = await text(s.finalize(), 'finalize');
      assert.ok(engine.heard(0, t), `heard as ${JSON.stringify(t)}`);
      if (!engine.interims) {
        assert.deepEqual(interims, []);
        return;
      }
      assert.ok(interims.every((i) => i.trim() !== ''), `no empty interim: ${JSON.stringify(interims)}`);
      assert.equal(late, 0, 'no interim after finalize() was called');
      // The next utterance's interims are its own.
      finalizing = false;
      interims.length = 0;
      const next = engine.audio(1);
      for (let o = 0; o < next.length; o += 320) s.write(next.subarray(o, o + 320));
      assert.ok(await until(() => interims.length > 0, LIMIT_MS), 'the next utterance has interims too');
      const t1 = await text(s.finalize(), 'finalize of the next utterance');
      assert.ok(engine.heard(1, t1), `the next utterance heard as ${JSON.stringify(t1)}`);
    });

    it('an empty utterance gives ""', async () => {
      const s = await open();
      assert.equal(await text(s.finalize(), 'finalize without audio'), '');
      if (engine.hearsSilence) {
        s.write(silence(500));
        assert.equal(await text(s.finalize(), 'finalize of silence'), '');
      }
      s.write(engine.audio(0));
      const t = await text(s.finalize(), 'finalize after the empty ones');
      assert.ok(engine.heard(0, t), `heard as ${JSON.stringify(t)}`);
    });

    it('after close(): finalize rejects with a ProviderError of kind asr, write is ignored', async () => {
      const s = await open();
      await s.close();
      assert.doesNotThrow(() => s.write(engine.audio(0)));
      await assert.rejects(within(s.finalize(), LIMIT_MS, 'finalize after close'), isAsrError);
    });

    it('close() is idempotent and abandons work in progress: the pending finalize rejects, nothing is left running', async () => {
      const s = await open();
      s.write(engine.audio(0));
      const rejected = assert.rejects(within(s.finalize(), 2_000, 'the finalize pending at close'), isAsrError);
      s.write(engine.audio(1));
      await Promise.all([s.close(), s.close()]);
      await s.close();
      await rejected;
      assert.ok(await until(() => engine.released(), 3_000), 'the engine released everything the stream held');
    });

    it('an engine that fails rejects the pending finalize instead of hanging', async () => {
      const s = await open();
      s.write(engine.audio(0));
      const rejected = assert.rejects(within(s.finalize(), LIMIT_MS, 'the finalize pending when the engine died'), isAsrError);
      await engine.kill();
      await rejected;
    });

    it('abort signals are honoured: openStream, a finalize aborted before or while pending; later utterances keep their own text', async () => {
      const reason = new Error('the caller gave up');
      const aborted = AbortSignal.abort(reason);
      await assert.rejects(engine.provider.openStream({ signal: aborted }), (e) => e === reason);

      const s = await open();
      s.write(engine.audio(0));
      await assert.rejects(within(s.finalize(aborted), 2_000, 'finalize with an aborted signal'), (e) => e === reason);

      s.write(engine.audio(0));
      const ctrl = new AbortController();
      const pending = s.finalize(ctrl.signal);
      ctrl.abort(reason);
      await assert.rejects(within(pending, 2_000, 'finalize aborted while pending'), (e) => e === reason);

      s.write(engine.audio(1));
      const t = await text(s.finalize(), 'the finalize after the aborted ones');
      assert.ok(engine.heard(1, t), `the next utterance got ${JSON.stringify(t)}`);
    });
  });
}
