// The early cut-in test set: caller utterances with a natural pause in the middle of the sentence
// (400-700 ms), where the agent must not answer at the pause. Spoken by Flite at test time
// (test/voice/cut-in.test.ts, bench/voice.ts).
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { PocketsphinxStt } from '../../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import { FvadProvider } from '../../src/providers/vad/fvad.ts';
import { FakeLlm, FakeTts } from '../../src/providers/fake/fake.providers.ts';
import { LlmEngine } from '../../src/voice/engines/llm.engine.ts';
import type { EndOfTurnSettings } from '../../src/voice/end-of-turn.ts';
import { VoicePipeline } from '../../src/voice/pipeline.ts';
import { concat } from './harness.ts';

export interface PausedUtterance {
  /** What is said before the pause. */
  before: string;
  /** The pause, ms. */
  pauseMs: number;
  /** What is said after it. */
  after: string;
}

const PAIRS: Array<[string, string]> = [
  ['i would like to', 'book an appointment'],
  ['my number is five five five', 'one two three four'],
  ['i want to talk to someone about', 'my bill'],
  ['can you help me with', 'my order'],
  ['i am calling because', 'my internet is down'],
  ['my name is john and', 'i need support'],
  ['i need to change the', 'delivery address'],
  ['the order number is one two three', 'four five six'],
  ['well um', 'i think i want sales'],
  ['i was wondering if', 'you are open on sunday'],
  ['could you tell me the', 'price of the premium plan'],
  ['i would like to cancel my', 'subscription'],
  ['we are looking for', 'a new supplier'],
  ['please send it to', 'my office'],
  ['i bought a laptop from you and', 'it does not turn on'],
  ['my zip code is nine four one', 'zero three'],
  ['the problem is that', 'the screen is broken'],
  ['i want to speak with', 'a manager'],
  ['my account number is two four six', 'eight one zero'],
  ['i would like to order a', 'large pizza'],
];

const PAUSES_MS = [400, 450, 500, 550, 600, 650, 700];

/** The 20 utterances of the set, their pauses cycling through 400-700 ms. */
export const CUT_IN_SET: readonly PausedUtterance[] = PAIRS.map(([before, after], i) => ({ before, after, pauseMs: PAUSES_MS[i % PAUSES_MS.length]! }));

/** Flite kal16's speech of `text` with its leading and trailing silence cut off (16 kHz). */
async function spoken(tts: FliteTts, text: string): Promise<Int16Array> {
  const parts: Int16Array[] = [];
  for await (const c of tts.synthesize(text, { voiceId: 'flite-kal16' })) parts.push(c);
  const pcm = concat(...parts);
  let first = -1;
  let last = -1;
  for (let i = 0; i < pcm.length; i++) {
    if (Math.abs(pcm[i]!) < 300) continue;
    if (first < 0) first = i;
    last = i;
  }
  return first < 0 ? pcm : pcm.slice(first, last + 1);
}

/**
 * An utterance's audio: the speech before the pause, exactly `pauseMs` of silence, the speech
 * after; with where the speech after the pause begins and ends, ms from the start.
 */
export async function pausedSpeech(tts: FliteTts, u: PausedUtterance): Promise<{ pcm: Int16Array; resumeMs: number; endMs: number }> {
  const a = await spoken(tts, u.before);
  const b = await spoken(tts, u.after);
  const pcm = concat(a, new Int16Array(Math.round(u.pauseMs * 16)), b);
  const resumeMs = (a.length / 16000) * 1000 + u.pauseMs;
  return { pcm, resumeMs, endMs: (pcm.length / 16000) * 1000 };
}

/** One utterance of the set as the agent took it. */
export interface CutInResult {
  utterance: PausedUtterance;
  /** The agent began a reply before the caller had finished (at the pause). */
  early: boolean;
  /** First agent audio after the end of the caller's speech, ms (undefined: never answered / early). */
  replyAfterMs: number | undefined;
  /** The user turns the recogniser heard. */
  heard: string[];
}

/**
 * Plays every utterance of the set, in real time (20 ms frames on a real timer), into its own
 * pipeline on the embedded engines (fvad, PocketSphinx streaming with interim hypotheses) with
 * instant fake synthesis and an engine that answers "Okay.", and reports whether the agent began
 * to answer before the caller had finished. `endOfTurn` undefined: the fixed 500 ms end of turn.
 * Preemptive replies are on, as an agent has them by default: a reply prepared in the pause must
 * not play before the caller has finished either. `lanes` utterances play at once (each its own
 * call, as on a server), results in the set's order.
 */
export async function runCutInSet(
  endOfTurn: EndOfTurnSettings | undefined,
  set: readonly PausedUtterance[] = CUT_IN_SET,
  preemptive = true,
  lanes = 1,
): Promise<CutInResult[]> {
  const tts = new FliteTts();
  const stt = new PocketsphinxStt();
  const results: CutInResult[] = [];
  try {
    await Promise.all(
      Array.from({ length: lanes }, async (_, lane) => {
        for (let i = lane; i < set.length; i += lanes) results[i] = await playOne(set[i]!, { tts, stt, endOfTurn, preemptive });
      }),
    );
  } finally {
    await tts.close();
  }
  return results;
}

async function playOne(
  utterance: PausedUtterance,
  o: { tts: FliteTts; stt: PocketsphinxStt; endOfTurn: EndOfTurnSettings | undefined; preemptive: boolean },
): Promise<CutInResult> {
  const s = await pausedSpeech(o.tts, utterance);
  const leadMs = 600;
  const audio = concat(new Int16Array(leadMs * 16), s.pcm, new Int16Array(2_000 * 16));
  const p = new VoicePipeline({
    stt: o.stt, tts: new FakeTts({ msPerChar: 1 }), vad: new FvadProvider(), startSpeaker: 'user',
    // Enough answers for the replies prepared and dropped as well as those played.
    engine: new LlmEngine({ config: { begin_message: '' }, llm: new FakeLlm(Array.from({ length: 50 }, () => 'Okay.')) }),
    preemptive: o.preemptive,
    ...(o.endOfTurn ? { endOfTurn: o.endOfTurn } : {}),
  });
  let firstReplyAt: number | undefined;
  let heard: string[] = [];
  const t0 = performance.now();
  p.on('agent_start_talking', () => (firstReplyAt ??= performance.now() - t0 - leadMs));
  p.on('transcript_update', (t) => (heard = t.filter((u) => u.role === 'user').map((u) => u.text)));
  await p.start();
  // Until the agent's first reply: it decides the result (early or not, and how soon), so the
  // rest of the trailing silence would only wait out real time (about a second an utterance).
  for (let i = 0, at = 0; at < audio.length && firstReplyAt === undefined; i++, at += 320) {
    p.pushAudio(audio.subarray(at, at + 320));
    const due = t0 + (i + 1) * 20;
    await new Promise((r) => setTimeout(r, Math.max(0, due - performance.now())));
  }
  // A recogniser behind real time (a loaded machine) may still be finishing the last turn.
  for (const until = performance.now() + 3_000; firstReplyAt === undefined && performance.now() < until; ) await new Promise((r) => setTimeout(r, 50));
  await p.close();
  const early = firstReplyAt !== undefined && firstReplyAt < s.endMs;
  return { utterance, early, replyAfterMs: !early && firstReplyAt !== undefined ? firstReplyAt - s.endMs : undefined, heard };
}
