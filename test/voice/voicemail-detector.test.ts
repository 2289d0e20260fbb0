// The answering-machine detector (src/voice/voicemail-detector.ts) on real speech: greetings spoken
// by Flite, a synthesised beep, against a person's short "Hello?". Audio is fed in 20 ms chunks,
// as an endpoint hands it over; the detector's clock is the audio itself.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { type VoicemailDecision, VoicemailDetector } from '../../src/voice/voicemail-detector.ts';
import { concat, silence } from './harness.ts';

const GREETING = "Hi, you have reached Sam Jones. I can't come to the phone right now. Please leave your name and number after the tone, and I will call you back.";

/** A tone at `hz` (16 kHz), as answering machines beep; a little noise on it, as a phone line has. */
function beep(ms: number, hz = 1000): Int16Array {
  let seed = 7;
  return Int16Array.from({ length: ms * 16 }, (_, i) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return Math.round(9000 * Math.sin((2 * Math.PI * hz * i) / 16000) + ((seed % 400) - 200));
  });
}

/** Feeds `pcm` in 20 ms chunks; returns every decision with the audio position it came at. */
function run(detector: VoicemailDetector, pcm: Int16Array, heard?: { atMs: number; text: string }): VoicemailDecision[] {
  const out: VoicemailDecision[] = [];
  for (let at = 0; at < pcm.length; at += 320) {
    out.push(...detector.push(pcm.subarray(at, at + 320)));
    if (heard && detector.elapsedMs === heard.atMs) out.push(...detector.hear(heard.text));
  }
  return out;
}

describe('voicemail detector on real speech', () => {
  let flite: FliteTts;
  const speech = new Map<string, Int16Array>();
  const say = async (text: string) => {
    const parts: Int16Array[] = [];
    for await (const c of flite.synthesize(text, { voiceId: 'flite-kal16' })) parts.push(c);
    return concat(...parts);
  };
  before(async () => {
    flite = new FliteTts();
    speech.set('greeting', await say(GREETING));
    speech.set('hello', await say('Hello?'));
    speech.set('hi', await say('Hi, this is Sam.'));
  });
  after(async () => {
    await flite.close();
  });

  it('a long greeting is a machine before it ends, and the message window opens at the end of the beep', () => {
    const greeting = speech.get('greeting')!;
    assert.ok(greeting.length / 16 > 6_000, `the greeting is long (${greeting.length / 16} ms)`);
    const detector = new VoicemailDetector({ timeoutMs: 30_000 });
    const beepAt = greeting.length / 16 + 400;
    const decisions = run(detector, concat(silence(300), greeting, silence(400), beep(500), silence(3_000)));
    assert.deepEqual(decisions.map((d) => `${d.kind}:${d.cue}`), ['machine:long_greeting', 'message_window:beep_end']);
    assert.ok(decisions[0]!.atMs < beepAt - 2_000, `decided during the greeting (${decisions[0]!.atMs} ms)`);
    const window = decisions[1]!.atMs;
    assert.ok(window >= beepAt + 300 + 500 && window <= beepAt + 300 + 500 + 60, `the window opens as the beep ends (${window} ms, beep ${beepAt + 300}-${beepAt + 800})`);
  });

  it("the greeting's words decide a machine as soon as they are heard", () => {
    const detector = new VoicemailDetector({ timeoutMs: 30_000 });
    const decisions = run(detector, concat(silence(300), speech.get('greeting')!.subarray(0, 16 * 2_000)), { atMs: 1_500, text: 'hi you have reached sam jones i cant come to the phone right now please leave your name' });
    assert.deepEqual(decisions.map((d) => `${d.kind}:${d.cue}@${d.atMs}`), ['machine:greeting_phrase@1500']);
  });

  it('a beep alone is a machine (a greeting the recogniser missed), and its end is the window', () => {
    const detector = new VoicemailDetector({ timeoutMs: 30_000 });
    const decisions = run(detector, concat(silence(1_000), beep(400, 850), silence(1_000)));
    assert.deepEqual(decisions.map((d) => `${d.kind}:${d.cue}`), ['machine:beep', 'message_window:beep_end']);
    assert.ok(decisions[0]!.atMs >= 1_000 + 160 && decisions[0]!.atMs <= 1_000 + 220, `the beep is heard after 160 ms of it (${decisions[0]!.atMs})`);
  });

  it('with no beep, the window opens once the greeting has ended and the line is quiet', () => {
    const greeting = speech.get('greeting')!;
    const detector = new VoicemailDetector({ timeoutMs: 30_000 });
    const decisions = run(detector, concat(greeting, silence(3_000)));
    assert.deepEqual(decisions.map((d) => `${d.kind}:${d.cue}`), ['machine:long_greeting', 'message_window:greeting_end']);
    const end = greeting.length / 16;
    assert.ok(decisions[1]!.atMs >= end + 1_000 && decisions[1]!.atMs <= end + 1_600, `after 1.5 s of quiet (${decisions[1]!.atMs} ms, greeting ends ${end})`);
  });

  it('a person\'s short "Hello?" then a pause is a human within a second, and speech is never a beep', () => {
    for (const name of ['hello', 'hi']) {
      const words = speech.get(name)!;
      const detector = new VoicemailDetector({ timeoutMs: 30_000 });
      const decisions = run(detector, concat(silence(400), words, silence(2_000)));
      assert.deepEqual(decisions.map((d) => `${d.kind}:${d.cue}`), ['human:human_pause'], name);
      const end = 400 + words.length / 16;
      assert.ok(decisions[0]!.atMs <= end + 900, `${name}: decided ${decisions[0]!.atMs - end} ms after the words`);
    }
    // A long greeting never looks like a tone to the beep search.
    const detector = new VoicemailDetector({ timeoutMs: 30_000 });
    assert.notEqual(run(detector, speech.get('greeting')!)[0]?.cue, 'beep');
  });

  it('hears a telephone-band call at 8 kHz as it came: the greeting, then the beep (1 kHz) and its end; "Hello?" is a human', () => {
    // The phone band: Flite's 16 kHz speech averaged in pairs to 8 kHz; the beep made at 8 kHz; 20 ms chunks of 160 samples.
    const narrow = (pcm: Int16Array) => Int16Array.from({ length: pcm.length >> 1 }, (_, i) => Math.round((pcm[2 * i]! + pcm[2 * i + 1]!) / 2));
    const beep8k = (ms: number) => Int16Array.from({ length: ms * 8 }, (_, i) => Math.round(9000 * Math.sin((2 * Math.PI * 1000 * i) / 8000)));
    const run8k = (detector: VoicemailDetector, pcm: Int16Array) => {
      const out: VoicemailDecision[] = [];
      for (let at = 0; at < pcm.length; at += 160) out.push(...detector.push(pcm.subarray(at, at + 160)));
      return out;
    };
    const greeting = narrow(speech.get('greeting')!);
    const beepAt = 300 + greeting.length / 8 + 400;
    const detector = new VoicemailDetector({ timeoutMs: 30_000, sampleRateHz: 8000 });
    const decisions = run8k(detector, concat(new Int16Array(300 * 8), greeting, new Int16Array(400 * 8), beep8k(500), new Int16Array(3_000 * 8)));
    assert.deepEqual(decisions.map((d) => `${d.kind}:${d.cue}`), ['machine:long_greeting', 'message_window:beep_end']);
    const window = decisions[1]!.atMs;
    assert.ok(window >= beepAt + 500 && window <= beepAt + 500 + 60, `the window opens as the beep ends (${window} ms, beep ${beepAt}-${beepAt + 500})`);
    // A beep alone, at 8 kHz, is heard after 160 ms of it.
    const alone = run8k(new VoicemailDetector({ timeoutMs: 30_000, sampleRateHz: 8000 }), concat(new Int16Array(8_000), beep8k(400), new Int16Array(8_000)));
    assert.deepEqual(alone.map((d) => `${d.kind}:${d.cue}`), ['machine:beep', 'message_window:beep_end']);
    assert.ok(alone[0]!.atMs >= 1_000 + 160 && alone[0]!.atMs <= 1_000 + 220, `the beep is heard after 160 ms of it (${alone[0]!.atMs})`);
    const hello = narrow(speech.get('hello')!);
    const person = run8k(new VoicemailDetector({ timeoutMs: 30_000, sampleRateHz: 8000 }), concat(new Int16Array(400 * 8), hello, new Int16Array(2_000 * 8)));
    assert.deepEqual(person.map((d) => `${d.kind}:${d.cue}`), ['human:human_pause']);
  });

  it('a callee who says nothing is a human after 5 s; talk that never settles ends at the bounded timeout', () => {
    assert.deepEqual(run(new VoicemailDetector({ timeoutMs: 30_000 }), silence(6_000, 30)).map((d) => `${d.kind}:${d.cue}@${d.atMs}`), ['human:silence@5000']);
    // 2.5 s utterances (longer than a person's first words, shorter than a greeting) with 1 s pauses.
    const hi = speech.get('greeting')!.subarray(0, 16 * 2_500);
    const talk = concat(hi, silence(1_000), hi, silence(1_000), hi, silence(1_000));
    // Asked for 1 s, the window is held at its lower bound, 5 s.
    assert.deepEqual(run(new VoicemailDetector({ timeoutMs: 1_000 }), talk).map((d) => `${d.kind}:${d.cue}@${d.atMs}`), ['human:timeout@5000']);
  });
});
