// A reply spoken as it streams on providers that take text incrementally (issue 26, item 4, with
// streaming TTS): against the local ElevenLabs and Cartesia servers, the words reach the provider
// before the reply is complete, the first piece and the end (content_complete) are flushed, text
// left waiting is flushed after the idle timeout, barge-in cancels the generation, and the
// transcript of a barged-in reply keeps only the words the provider's alignment puts in the played audio.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ElevenLabsTts } from '../../src/providers/elevenlabs/elevenlabs.tts.ts';
import { ELEVENLABS_PREMADE_VOICES } from '../../src/providers/elevenlabs/elevenlabs.voices.ts';
import { CartesiaTts } from '../../src/providers/cartesia/cartesia.tts.ts';
import { CARTESIA_LIBRARY_VOICES } from '../../src/providers/cartesia/cartesia.voices.ts';
import type { TtsProvider } from '../../src/providers/tts.ts';
import { textStreamStage } from '../../src/voice/stages/text-stream.stage.ts';
import type { TtsEvent } from '../../src/voice/stages/tts.stage.ts';
import { FIRST_PIECE_WORDS, IDLE_FLUSH_MS } from '../../src/voice/stages/engine.stage.ts';
import { ManualScheduler } from '../../src/lib/scheduler.ts';
import type { EngineOutput } from '../../src/voice/engines/types.ts';
import { EnergyVad, FakeLlm, FakeStt } from '../../src/providers/fake/fake.providers.ts';
import { LlmEngine } from '../../src/voice/engines/llm.engine.ts';
import { fakeCartesia, fakeElevenLabs } from '../helpers/speech-servers.ts';
import { Recorder, TestClock, feed, makePipeline, silence, streamed, tone } from './harness.ts';

const elevenLabs = (baseUrl: string) => new ElevenLabsTts({ baseUrl, apiKey: 'el-key', model: 'eleven_flash_v2_5', voices: ELEVENLABS_PREMADE_VOICES, defaultVoiceId: '11labs-Sarah', connectTimeoutMs: 2000 });
const cartesia = (url: string) => new CartesiaTts({ url, apiKey: 'ca-key', model: 'sonic-2', voices: CARTESIA_LIBRARY_VOICES, defaultVoiceId: CARTESIA_LIBRARY_VOICES[0]!.voiceId, connectTimeoutMs: 2000 });

/** Runs the stage in the background, collecting its events; `stop()` is a barge-in. */
function run(tts: TtsProvider, outputs: AsyncIterable<EngineOutput>, time?: ManualScheduler) {
  const ctrl = new AbortController();
  const stream = tts.openTextStream!({ signal: ctrl.signal });
  assert.ok(stream, 'the provider takes streamed text');
  const events: TtsEvent[] = [];
  const done = (async () => {
    try {
      for await (const ev of textStreamStage(outputs, stream, { signal: ctrl.signal, provider: tts.id, ...(time ? { time } : {}) })) {
        events.push(ev);
        if (ctrl.signal.aborted) break;
      }
    } catch (e) {
      // A barge-in ends the stage with the signal's abort, as the reply expects it.
      if (!ctrl.signal.aborted) throw e;
    }
  })();
  const audio = () => events.filter((e) => e.type === 'audio').length;
  return { stream, events, done, audio, stop: () => ctrl.abort() };
}

const until = async (what: string, ok: () => boolean, ms = 3000): Promise<void> => {
  const end = performance.now() + ms;
  while (!ok()) {
    if (performance.now() > end) assert.fail(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

const WORDS = 'I have looked at every one of the flights leaving tomorrow morning for you'.split(' ');

test('elevenlabs: words go to the socket as they arrive, the first piece is flushed, the rest at content_complete', async () => {
  const srv = await fakeElevenLabs({ chunks: 2 });
  const tts = elevenLabs(srv.baseUrl);
  const { outputs, push } = streamed();
  const r = run(tts, outputs);
  try {
    for (const [i, w] of WORDS.entries()) {
      push({ type: 'text', text: i === 0 ? w : ` ${w}` });
      // A word is whole once the next one starts: word i-1 is on the socket when word i arrives.
      if (i >= 1) await until(`word ${i} on the socket`, () => srv.seen[0]?.messages.some((m) => String(m.text).includes(WORDS[i - 1]!)) === true);
      if (i === FIRST_PIECE_WORDS) {
        await until('the first audio, before the reply is complete', () => r.audio() > 0);
        const flushAt = srv.seen[0]!.messages.findIndex((m) => m.flush === true);
        const before = srv.seen[0]!.messages.slice(1, flushAt).map((m) => m.text).join('');
        assert.equal(before.trim(), WORDS.slice(0, FIRST_PIECE_WORDS).join(' '), `flushed after the first five words: ${JSON.stringify(srv.seen[0]!.messages)}`);
      }
    }
    assert.ok(!srv.seen[0]!.messages.some((m) => m.text === ''), 'not closed before content_complete');
    push(null);
    await r.done;
    const m = srv.seen[0]!.messages;
    assert.deepEqual(m.slice(-2), [{ text: ' ', flush: true }, { text: '' }], 'content_complete: flushed and closed');
    assert.equal(srv.seen.length, 1, 'one socket for the whole reply');
    const text = r.events.filter((e) => e.type === 'sentence_text').at(-1);
    assert.deepEqual(text, { type: 'sentence_text', index: 0, text: WORDS.join(' ') });
    const samples = r.events.reduce((n, e) => n + (e.type === 'audio' ? e.pcm.length : 0), 0);
    assert.equal(samples, 2 * 2 * 1600, 'two pieces of two chunks');
    assert.deepEqual(r.stream.words().map((w) => w.text), WORDS, 'the alignment spells out the words');
  } finally {
    await srv.close();
  }
});

test(`elevenlabs: text left waiting ${IDLE_FLUSH_MS} ms is flushed without content_complete; barge-in closes the socket`, async () => {
  const srv = await fakeElevenLabs({ chunks: -1, intervalMs: 20 });
  const time = new ManualScheduler();
  const { outputs, push } = streamed();
  const r = run(elevenLabs(srv.baseUrl), outputs, time);
  try {
    push({ type: 'text', text: 'Let me che' });
    await until('the whole words on the socket', () => srv.seen[0]?.messages.some((m) => m.text === 'Let me ') === true);
    await new Promise((res) => setTimeout(res, 50));
    assert.ok(!srv.seen[0]!.messages.some((m) => m.flush), 'nothing flushed yet');
    time.advance(IDLE_FLUSH_MS - 1);
    await new Promise((res) => setTimeout(res, 20));
    assert.ok(!srv.seen[0]!.messages.some((m) => m.flush), 'not before the idle timeout');
    time.advance(1);
    await until('the idle flush', () => srv.seen[0]!.messages.some((m) => m.flush === true));
    assert.equal(srv.seen[0]!.messages.slice(1).map((m) => m.text).join('').trim(), 'Let me che', 'the trailing part word goes too');
    await until('audio without content_complete', () => r.audio() > 2);
    const stoppedAt = performance.now();
    r.stop();
    await r.done;
    await until('the socket closed', () => srv.seen[0]!.closedAtMs !== undefined);
    assert.ok(srv.seen[0]!.closedAtMs! - stoppedAt < 200, 'closed at once');
  } finally {
    await srv.close();
  }
});

test('cartesia: one context takes the words with continue: true, flushed, ended with continue: false; barge-in cancels it', async () => {
  const srv = await fakeCartesia({ chunks: 1 });
  const tts = cartesia(srv.url);
  try {
    const { outputs, push } = streamed();
    const r = run(tts, outputs);
    for (const [i, w] of WORDS.slice(0, 7).entries()) push({ type: 'text', text: i === 0 ? w : ` ${w}` });
    await until('the first audio, before the reply is complete', () => r.audio() > 0);
    const reqs = srv.seen.requests;
    const ids = new Set(reqs.map((q) => q.context_id));
    assert.equal(ids.size, 1, 'one context');
    assert.ok(reqs.every((q) => q.continue === true && q.add_timestamps === true));
    assert.ok(reqs.some((q) => q.flush === true && q.transcript === ''), 'the first piece flushed');
    push({ type: 'text', text: ` ${WORDS.slice(7).join(' ')}` });
    push(null);
    await r.done;
    assert.deepEqual({ transcript: reqs.at(-1)!.transcript, continue: reqs.at(-1)!.continue }, { transcript: '', continue: false }, 'content_complete ends the context');
    assert.equal(reqs.map((q) => q.transcript).join('').trim(), WORDS.join(' '));
    assert.deepEqual(r.stream.words().map((w) => w.text), WORDS, 'word timestamps');
    assert.ok(r.stream.words().every((w, i, all) => i === 0 || w.startMs >= all[i - 1]!.endMs - 1e-6), 'in order along the audio');

    const srv2 = await fakeCartesia({ chunks: -1, intervalMs: 20 });
    const s2 = streamed();
    const r2 = run(cartesia(srv2.url), s2.outputs);
    s2.push({ type: 'text', text: 'One two three four five six seven' });
    await until('audio', () => r2.audio() > 1);
    r2.stop();
    await r2.done;
    await until('the cancel', () => srv2.seen.cancelled.length === 1);
    assert.equal(srv2.seen.cancelled[0], srv2.seen.requests[0]!.context_id);
    await srv2.close();
  } finally {
    await tts.close();
    await srv.close();
  }
});

test('barge-in on a streamed reply: the transcript keeps only the words the alignment puts in the played audio', { timeout: 20_000 }, async () => {
  // The first piece (five words) is spoken at once; the rest of the reply is slow to come back,
  // so the caller, who cuts in after the first piece has played, heard those five words only.
  const srv = await fakeElevenLabs({ chunks: 3, laterDelayMs: 3000 });
  const clock = new TestClock();
  const reply = 'Our plans are listed here and they include the basic plan the premium plan and the family plan.';
  const llm = new FakeLlm([reply, 'Sure.']);
  const p = makePipeline({ stt: new FakeStt(['wait']), tts: elevenLabs(srv.baseUrl), vad: new EnergyVad(), engine: new LlmEngine({ config: {}, llm }) }, clock);
  const rec = new Recorder(p, clock);
  try {
    await p.start();
    for (let i = 0; i < 150 && rec.agentFrames.length === 0; i++) await feed(p, clock, silence(20), 5);
    assert.ok(rec.agentFrames.length > 0, 'the agent is talking');
    // Past the first piece's 300 ms of audio, into the wait for the rest.
    await feed(p, clock, silence(500), 5);
    await feed(p, clock, tone(600), 5);
    await feed(p, clock, silence(300), 5);
    const cut = rec.transcript.find((u) => u.role === 'agent' && u.cutOff);
    assert.ok(cut, 'the reply was cut off');
    assert.equal(cut.text, 'Our plans are listed here');
    assert.ok(srv.seen[0]!.closedAtMs !== undefined, 'the generation was cancelled');
  } finally {
    await p.close();
    await srv.close();
  }
});

test(`cartesia: text left waiting ${IDLE_FLUSH_MS} ms is flushed, and a function call flushes what came before it`, async () => {
  const srv = await fakeCartesia({ chunks: 1 });
  const tts = cartesia(srv.url);
  const time = new ManualScheduler();
  try {
    const { outputs, push } = streamed();
    const r = run(tts, outputs, time);
    push({ type: 'text', text: 'One moment' });
    await until('the whole word sent', () => srv.seen.requests.some((q) => q.transcript === 'One '));
    const flushes = () => srv.seen.requests.filter((q) => q.flush === true).length;
    assert.equal(flushes(), 0);
    time.advance(IDLE_FLUSH_MS);
    await until('the idle flush', () => flushes() === 1);
    assert.equal(srv.seen.requests.map((q) => q.transcript).join(''), 'One moment', 'the trailing word went before the flush');
    push({ type: 'text', text: ' please, I am check' });
    push({ type: 'tool_call_invocation', tool_call_id: 't1', name: 'lookup', arguments: '{}' });
    await until('the flush before the function call', () => flushes() === 2);
    await until('the function call passed on', () => r.events.some((e) => e.type === 'tool_call_invocation'));
    assert.equal(srv.seen.requests.map((q) => q.transcript).join(''), 'One moment please, I am check');
    push(null);
    await r.done;
    assert.equal(srv.seen.requests.at(-1)!.continue, false);
  } finally {
    await tts.close();
    await srv.close();
  }
});
