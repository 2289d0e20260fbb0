import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocketServer } from 'ws';
import type { AddressInfo } from 'node:net';
import { DeepgramStt } from '../../src/providers/deepgram/deepgram.stt.ts';

/** A local server speaking Deepgram's live protocol: binary audio up, JSON Results down. */
async function fakeDeepgram(words: string[], options: { answerDelaysMs?: number[]; timed?: boolean } = {}) {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const seen = { auth: '', query: '', bytes: 0, finalizes: 0, closeStream: 0 };
  wss.on('connection', (ws, req) => {
    seen.auth = String(req.headers.authorization);
    seen.query = String(req.url);
    let pending = 0;
    let total = 0;
    ws.on('message', (data, isBinary) => {
      if (isBinary) {
        seen.bytes += (data as Buffer).length;
        pending += (data as Buffer).length;
        total += (data as Buffer).length;
        // Every 0.2 s of audio: an interim, then a final segment with the next word.
        if (pending >= 6400) {
          pending = 0;
          const w = words.shift() ?? '';
          ws.send(JSON.stringify({ type: 'Results', is_final: false, speech_final: false, channel: { alternatives: [{ transcript: w + '…' }] } }));
          // Deepgram's word times: seconds from the stream's first sample (the last 0.2 s: this word).
          const timed = options.timed ? { words: [{ word: w, punctuated_word: w, start: (total - 6400) / 32_000, end: total / 32_000, confidence: 0.9 }] } : {};
          ws.send(JSON.stringify({ type: 'Results', is_final: true, speech_final: false, channel: { alternatives: [{ transcript: w, ...timed }] } }));
        }
        return;
      }
      const m = JSON.parse((data as Buffer).toString('utf8')) as { type: string };
      if (m.type === 'Finalize') {
        seen.finalizes++;
        const answer = () => ws.send(JSON.stringify({ type: 'Results', is_final: true, speech_final: true, from_finalize: true, channel: { alternatives: [{ transcript: '' }] } }));
        const delay = options.answerDelaysMs?.shift() ?? 0;
        // A delayed answer holds the connection's later messages too: the server answers in order.
        if (delay > 0) {
          ws.pause();
          setTimeout(() => {
            answer();
            ws.resume();
          }, delay);
        } else {
          answer();
        }
      }
      if (m.type === 'CloseStream') seen.closeStream++;
    });
  });
  const port = (wss.address() as AddressInfo).port;
  return { url: `ws://127.0.0.1:${port}/v1/listen`, seen, close: () => new Promise<void>((r) => wss.close(() => r())) };
}

test('deepgram: streams audio, collects is_final segments, Finalize ends the utterance', async () => {
  const srv = await fakeDeepgram(['hello', 'there', 'second']);
  const stt = new DeepgramStt({ url: srv.url, apiKey: 'dg-key', model: 'nova-2' });
  const s = await stt.openStream();
  for (let i = 0; i < 20; i++) s.write(new Int16Array(320));
  const first = await s.finalize();
  assert.equal(first.text, 'hello there');
  for (let i = 0; i < 10; i++) s.write(new Int16Array(320));
  assert.equal((await s.finalize()).text, 'second');
  assert.equal(srv.seen.auth, 'Token dg-key');
  assert.match(srv.seen.query, /encoding=linear16/);
  assert.match(srv.seen.query, /sample_rate=16000/);
  assert.match(srv.seen.query, /model=nova-2/);
  assert.equal(srv.seen.bytes, 30 * 640);
  assert.equal(srv.seen.finalizes, 2);
  await s.close();
  await s.close();
  await srv.close();
});

test('deepgram: an unreachable server fails openStream with a retryable asr error', async () => {
  const stt = new DeepgramStt({ url: 'ws://127.0.0.1:9/v1/listen', connectTimeoutMs: 2000 });
  await assert.rejects(stt.openStream(), (e: Error & { kind?: string; retryable?: boolean }) => e.kind === 'asr' && e.retryable === true);
});

test('deepgram: a second finalize before the first answer: each gets its own utterance, none is left pending', async () => {
  const srv = await fakeDeepgram(['one', 'two']);
  const s = await new DeepgramStt({ url: srv.url }).openStream();
  for (let i = 0; i < 10; i++) s.write(new Int16Array(320)); // "one"
  const first = s.finalize();
  for (let i = 0; i < 10; i++) s.write(new Int16Array(320)); // "two"
  const second = s.finalize();
  // Before the fix the first finalize never settled and the second got "one".
  const settled = await Promise.race([Promise.all([first, second]), new Promise((r) => setTimeout(() => r('pending'), 2000))]);
  assert.deepEqual(settled, [{ text: 'one' }, { text: 'two' }]);
  await s.close();
  await srv.close();
});

test('deepgram: an answer that comes after the finalize timeout is not handed to the next utterance', async () => {
  // The first Finalize is answered 450 ms late; the stream gives up after 300 ms with what it has.
  const srv = await fakeDeepgram(['one', 'two'], { answerDelaysMs: [450] });
  const s = await new DeepgramStt({ url: srv.url, finalizeTimeoutMs: 300 }).openStream();
  for (let i = 0; i < 10; i++) s.write(new Int16Array(320));
  assert.deepEqual(await s.finalize(), { text: 'one' });
  for (let i = 0; i < 10; i++) s.write(new Int16Array(320));
  assert.deepEqual(await s.finalize(), { text: 'two' }, 'the late answer to the first Finalize is discarded');
  await s.close();
  await srv.close();
});

test("deepgram: the words' times, from the start of each utterance's audio (Deepgram times them from the stream's start)", async () => {
  const srv = await fakeDeepgram(['hello', 'there', 'second'], { timed: true });
  const stt = new DeepgramStt({ url: srv.url, apiKey: 'dg-key', model: 'nova-2' });
  const s = await stt.openStream();
  for (let i = 0; i < 20; i++) s.write(new Int16Array(320));
  assert.deepEqual((await s.finalize()).words, [
    { word: 'hello', startMs: 0, endMs: 200 },
    { word: 'there', startMs: 200, endMs: 400 },
  ]);
  // The second utterance's audio starts 400 ms into the stream: its words are timed from there.
  for (let i = 0; i < 10; i++) s.write(new Int16Array(320));
  assert.deepEqual((await s.finalize()).words, [{ word: 'second', startMs: 0, endMs: 200 }]);
  await s.close();
  await srv.close();
  // A server that gives no words: none (not an empty guess).
  const plain = await fakeDeepgram(['hi']);
  const p = await new DeepgramStt({ url: plain.url, apiKey: 'k' }).openStream();
  for (let i = 0; i < 10; i++) p.write(new Int16Array(320));
  assert.equal((await p.finalize()).words, undefined);
  await p.close();
  await plain.close();
});
