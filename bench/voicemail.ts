/**
 * Voicemail detection benchmark, `npm run bench -- voicemail` (issue 24): what the detector
 * (src/voice/voicemail-detector.ts) costs on an outbound call while it listens, as CPU per second
 * of the callee's audio, against the baseline every phone call already pays on the same audio in
 * the same run: the Speex resampling of 8 kHz to the pipeline's 16 kHz. The audio: Flite
 * greetings and a 1 kHz beep (the worst case: loud audio runs the Goertzel tone search on every
 * frame) and a person's "Hello?" then quiet. Also the decisions and when they came.
 */
import { createResampler } from '../src/providers/audio/resample.ts';
import { FliteTts } from '../src/providers/flite/flite.tts.ts';
import { VoicemailDetector } from '../src/voice/voicemail-detector.ts';
import { fmt } from './lib.ts';
import { concatPcm } from '../src/lib/pcm.ts';

const ROUNDS = 5;

const beep = (ms: number) => Int16Array.from({ length: ms * 16 }, (_, i) => Math.round(9000 * Math.sin((2 * Math.PI * 1000 * i) / 16000)));
const quiet = (ms: number) => new Int16Array(ms * 16);

export async function runVoicemailBench(options: { log: (line: string) => void }): Promise<string> {
  const tts = new FliteTts();
  const say = async (text: string) => {
    const parts: Int16Array[] = [];
    for await (const c of tts.synthesize(text, { voiceId: 'flite-kal16' })) parts.push(c);
    return concatPcm(parts);
  };
  const cases = [
    { name: 'machine: greeting, beep', audio: concatPcm([await say("Hi, you have reached Sam. I can't come to the phone right now. Please leave a message after the tone."), quiet(400), beep(500), quiet(2_000)]) },
    { name: 'machine: beep only (tone search on every loud frame)', audio: concatPcm([beep(10_000)]) },
    { name: 'person: "Hello?" then quiet', audio: concatPcm([quiet(300), await say('Hello?'), quiet(2_000)]) },
  ];
  await tts.close();
  const rows: string[] = ['| audio | decisions | detector CPU per s of audio | resampling 8k->16k per s (baseline) | ratio |', '|---|---|---|---|---|'];
  for (const c of cases) {
    const seconds = c.audio.length / 16_000;
    // The baseline's input: the same audio at 8 kHz, as a phone delivers it.
    const narrow = Int16Array.from({ length: c.audio.length / 2 }, (_, i) => c.audio[2 * i]!);
    let detectorMs = 0;
    let resampleMs = 0;
    let decisions = '';
    for (let round = 0; round < ROUNDS; round++) {
      const resampler = await createResampler(8_000, 16_000);
      let t = performance.now();
      for (let at = 0; at < narrow.length; at += 160) resampler.process(narrow.subarray(at, at + 160));
      resampleMs += performance.now() - t;
      resampler.close();
      // The detector keeps listening for the message window after a machine: fed the whole audio, as a call would until the window.
      const detector = new VoicemailDetector({ timeoutMs: 30_000 });
      const seen: string[] = [];
      t = performance.now();
      for (let at = 0; at < c.audio.length; at += 320) for (const d of detector.push(c.audio.subarray(at, at + 320))) seen.push(`${d.kind}:${d.cue}@${d.atMs}`);
      detectorMs += performance.now() - t;
      decisions = seen.join(', ');
    }
    const perS = (ms: number) => ms / ROUNDS / seconds;
    options.log(`voicemail: ${c.name}: ${decisions}`);
    rows.push(`| ${c.name} (${fmt(seconds)} s) | ${decisions} | ${fmt(perS(detectorMs), 2)} ms | ${fmt(perS(resampleMs), 2)} ms | ${fmt(perS(detectorMs) / perS(resampleMs))}x |`);
  }
  return rows.join('\n');
}
