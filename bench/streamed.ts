/**
 * Streamed text to first audio (issue 26, item 4): how soon the agent starts speaking a reply that
 * streams in word by word, on the embedded synthesiser (Flite kal16).
 *
 *   npm run bench -- streamed
 *
 * A reply streams at 8 words a second (one word every 125 ms, each word's token with its leading
 * space, as LLMs stream), its first clause 26 words long with no comma or full stop. Two rows,
 * interleaved round by round:
 *  - baseline: Flite synthesising the reply's first 5 words alone, from the request to its first
 *    audio: the synthesiser's own time for that text;
 *  - streamed: the reply through the call's sentence and synthesis stages (sentenceStage,
 *    ttsStage), from the arrival of the 5th word to the first audio. The 5th word is known whole
 *    when the 6th starts (125 ms later), so the floor is 125 ms plus the baseline.
 * Target: first audio at most 300 ms after the first 5 words arrive. The offset (streamed minus
 * baseline) is what the stages add beyond the synthesiser itself.
 *
 * A second part, on a streaming provider: a local server speaking ElevenLabs' stream-input
 * protocol, each flushed piece's first audio PROVIDER_LATENCY_MS after its flush (a hosted
 * provider's time to first audio), gets the same reply word by word, two rows interleaved:
 *  - chunked: the clause chunking (sentenceStage, ttsStage: a socket and a request per piece);
 *  - streamed: the words into one socket as they arrive (textStreamStage, openTextStream).
 * Both: the 5th word's arrival to the first audio, and the last word's arrival to the last audio.
 */
import { performance } from 'node:perf_hooks';
import os from 'node:os';
import { FliteTts } from '../src/providers/flite/flite.tts.ts';
import { sentenceStage } from '../src/voice/stages/engine.stage.ts';
import { ttsStage } from '../src/voice/stages/tts.stage.ts';
import { realScheduler } from '../src/lib/scheduler.ts';
import type { EngineOutput } from '../src/voice/engines/types.ts';
import { fmt, machine, percentile } from './lib.ts';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { ElevenLabsTts } from '../src/providers/elevenlabs/elevenlabs.tts.ts';
import { ELEVENLABS_PREMADE_VOICES } from '../src/providers/elevenlabs/elevenlabs.voices.ts';
import { textStreamStage } from '../src/voice/stages/text-stream.stage.ts';
import type { TtsEvent } from '../src/voice/stages/tts.stage.ts';

const WORD_MS = 125;
const CLAUSE = 'I have looked at every one of the flights leaving tomorrow morning from the main airport to the coast and the islands beyond it for you';
const TARGET_MS = 300;

export async function runStreamedBench(options: { rounds?: number; log?: (line: string) => void } = {}): Promise<string> {
  const rounds = options.rounds ?? Number(process.env.BENCH_STREAMED_ROUNDS ?? 20);
  const embedded = await embeddedPart(rounds, options.log);
  const provider = await providerPart(rounds, options.log);
  return [embedded, '', provider].join('\n');
}

async function embeddedPart(rounds: number, log?: (line: string) => void): Promise<string> {
  const options = { log };
  const tts = new FliteTts();
  const words = CLAUSE.split(' ');
  const firstFive = words.slice(0, 5).join(' ');
  const baseline: number[] = [];
  const streamed: number[] = [];
  try {
    // One synthesis before timing: the engine's first start is not what a call pays.
    for await (const chunk of tts.synthesize(firstFive, { voiceId: 'flite-kal16' })) if (chunk.length > 0) break;
    for (let r = 0; r < rounds; r++) {
      const start = performance.now();
      for await (const chunk of tts.synthesize(firstFive, { voiceId: 'flite-kal16' })) {
        if (chunk.length === 0) continue;
        baseline.push(performance.now() - start);
        break;
      }
      streamed.push(await streamedRound(tts, words));
      options.log?.(`streamed: round ${r + 1}/${rounds}: baseline ${fmt(baseline.at(-1)!, 0)} ms, streamed ${fmt(streamed.at(-1)!, 0)} ms`);
    }
  } finally {
    await tts.close();
  }
  const sb = [...baseline].sort((a, b) => a - b);
  const ss = [...streamed].sort((a, b) => a - b);
  const p50 = percentile(ss, 50);
  return [
    `Machine: ${machine()}; load average at the end ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}.`,
    `A reply streamed at 8 words/s (${WORD_MS} ms a word), first clause ${words.length} words without punctuation; ${rounds} rounds, interleaved.`,
    '',
    '| row | n | p50 (ms) | p90 (ms) | max (ms) |',
    '|---|---|---|---|---|',
    `| baseline: Flite kal16, first 5 words alone, request to first audio | ${sb.length} | ${fmt(percentile(sb, 50), 0)} | ${fmt(percentile(sb, 90), 0)} | ${fmt(sb.at(-1)!, 0)} |`,
    `| streamed: 5th word's arrival to first audio (sentence + synthesis stages) | ${ss.length} | ${fmt(p50, 0)} | ${fmt(percentile(ss, 90), 0)} | ${fmt(ss.at(-1)!, 0)} |`,
    '',
    `Offset (streamed minus baseline, p50): ${fmt(p50 - percentile(sb, 50), 0)} ms, of which ${WORD_MS} ms is the wait for the 6th word. Target ${TARGET_MS} ms after the first 5 words: ${p50 <= TARGET_MS ? 'met' : 'not met'} at p50, ${percentile(ss, 90) <= TARGET_MS ? 'met' : 'not met'} at p90.`,
  ].join('\n');
}

/** A streaming provider's first audio after each flushed piece, ms. */
const PROVIDER_LATENCY_MS = 150;

/**
 * A local server speaking ElevenLabs' stream-input protocol: each piece of text, once flushed
 * (`flush: true` or the closing `text: ""`), is answered PROVIDER_LATENCY_MS later with its audio
 * (60 ms a character, in 100 ms chunks), one piece after another; `isFinal` after the closing text.
 */
async function localStreamingProvider() {
  const http = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ server: http });
  wss.on('connection', (ws) => {
    let pending = '';
    let queue = Promise.resolve();
    ws.on('message', (data) => {
      const m = JSON.parse((data as Buffer).toString('utf8')) as { text?: string; flush?: boolean; voice_settings?: unknown };
      if (typeof m.text === 'string' && !m.voice_settings) pending += m.text;
      if (m.flush !== true && m.text !== '') return;
      const text = pending;
      pending = '';
      if (text.trim()) {
        queue = queue.then(async () => {
          await new Promise((r) => setTimeout(r, PROVIDER_LATENCY_MS));
          const chunks = Math.max(1, Math.ceil((text.length * 60) / 100));
          for (let i = 0; i < chunks && ws.readyState === ws.OPEN; i++) ws.send(JSON.stringify({ audio: Buffer.alloc(3200, 1).toString('base64'), isFinal: false }));
        });
      }
      if (m.text === '') queue = queue.then(() => void (ws.readyState === ws.OPEN && ws.send(JSON.stringify({ audio: null, isFinal: true }))));
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const { port } = http.address() as AddressInfo;
  return { baseUrl: `ws://127.0.0.1:${port}`, close: () => new Promise<void>((r) => { for (const c of wss.clients) c.terminate(); http.close(() => r()); }) };
}

async function providerPart(rounds: number, log?: (line: string) => void): Promise<string> {
  const srv = await localStreamingProvider();
  const tts = new ElevenLabsTts({ baseUrl: srv.baseUrl, model: 'eleven_flash_v2_5', voices: ELEVENLABS_PREMADE_VOICES, defaultVoiceId: '11labs-Sarah' });
  const words = `${CLAUSE}, and the earliest one leaves at seven. Shall I book it for you now?`.split(' ');
  const rows = { chunked: { first: [] as number[], tail: [] as number[] }, streamed: { first: [] as number[], tail: [] as number[] } };
  try {
    for (let r = 0; r < rounds; r++) {
      for (const mode of ['chunked', 'streamed'] as const) {
        const t = await providerRound(tts, words, mode);
        rows[mode].first.push(t.first);
        rows[mode].tail.push(t.tail);
      }
      log?.(`streamed: provider round ${r + 1}/${rounds}: chunked ${fmt(rows.chunked.first.at(-1)!, 0)} / ${fmt(rows.chunked.tail.at(-1)!, 0)} ms, streamed ${fmt(rows.streamed.first.at(-1)!, 0)} / ${fmt(rows.streamed.tail.at(-1)!, 0)} ms`);
    }
  } finally {
    await srv.close();
  }
  const row = (name: string, xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    return `| ${name} | ${sorted.length} | ${fmt(percentile(sorted, 50), 0)} | ${fmt(percentile(sorted, 90), 0)} | ${fmt(sorted.at(-1)!, 0)} |`;
  };
  const p50 = (xs: number[]) => percentile([...xs].sort((a, b) => a - b), 50);
  return [
    `Streaming provider (local, ElevenLabs' stream-input protocol, first audio ${PROVIDER_LATENCY_MS} ms after each flush), a ${words.length}-word reply at 8 words/s; ${rounds} rounds, interleaved.`,
    '',
    '| row | n | p50 (ms) | p90 (ms) | max (ms) |',
    '|---|---|---|---|---|',
    row('chunked (a request per piece): 5th word to first audio', rows.chunked.first),
    row('streamed (one socket, words as they arrive): 5th word to first audio', rows.streamed.first),
    row('chunked: last word to last audio', rows.chunked.tail),
    row('streamed: last word to last audio', rows.streamed.tail),
    '',
    `Streamed minus chunked, p50: first audio ${fmt(p50(rows.streamed.first) - p50(rows.chunked.first), 0)} ms, last audio ${fmt(p50(rows.streamed.tail) - p50(rows.chunked.tail), 0)} ms. 300 ms after the first 5 words: ${p50(rows.streamed.first) <= TARGET_MS ? 'met' : 'not met'} at p50 (streamed).`,
  ].join('\n');
}

/** One reply word by word to the provider, chunked or streamed: ms from the 5th word to the first audio, and from the last word to the last audio. */
async function providerRound(tts: ElevenLabsTts, words: string[], mode: 'chunked' | 'streamed'): Promise<{ first: number; tail: number }> {
  const ctrl = new AbortController();
  let fifthAt = 0;
  let lastAt = 0;
  async function* reply(): AsyncIterable<EngineOutput> {
    for (const [i, word] of words.entries()) {
      if (i > 0) await new Promise((r) => setTimeout(r, WORD_MS));
      if (i === 4) fifthAt = performance.now();
      lastAt = performance.now();
      yield { type: 'text', text: i === 0 ? word : ` ${word}` };
    }
  }
  const stream = mode === 'streamed' ? tts.openTextStream({ signal: ctrl.signal }) : undefined;
  const events: AsyncIterable<TtsEvent> = stream
    ? textStreamStage(reply(), stream, { signal: ctrl.signal, provider: tts.id, time: realScheduler })
    : ttsStage(sentenceStage(reply(), undefined, realScheduler), tts, { signal: ctrl.signal });
  let firstAt = 0;
  let lastAudioAt = 0;
  for await (const ev of events) {
    if (ev.type !== 'audio') continue;
    firstAt ||= performance.now();
    lastAudioAt = performance.now();
  }
  return { first: firstAt - fifthAt, tail: lastAudioAt - lastAt };
}

/** One reply streamed through the stages; ms from the 5th word's arrival to the first audio. */
async function streamedRound(tts: FliteTts, words: string[]): Promise<number> {
  const ctrl = new AbortController();
  let fifthAt = 0;
  let firstAudioAt = 0;
  async function* reply(): AsyncIterable<EngineOutput> {
    for (const [i, word] of words.entries()) {
      if (i > 0) await new Promise((r) => setTimeout(r, WORD_MS));
      if (ctrl.signal.aborted) return;
      if (i === 4) fifthAt = performance.now();
      yield { type: 'text', text: i === 0 ? word : ` ${word}` };
    }
  }
  const events = ttsStage(sentenceStage(reply(), undefined, realScheduler), tts, {
    voiceId: 'flite-kal16',
    signal: ctrl.signal,
    onFirstAudio: () => (firstAudioAt = performance.now()),
  });
  for await (const ev of events) {
    if (ev.type === 'audio' && firstAudioAt > 0) break;
  }
  ctrl.abort();
  return firstAudioAt - fifthAt;
}
