/** The work the voice pipeline's respond loop takes, one at a time (src/voice/pipeline.ts). */
import type { SettledTranscript } from './stages/stt.stage.ts';
import type { Speculation } from './speculation.ts';
import type { TurnMarks } from './turn-trace.ts';

/** One piece of work for the pipeline's respond loop: the opening, unprompted speech, a user turn. */
export type PipelineJob =
  | { kind: 'begin' }
  | { kind: 'unprompted' }
  | {
      kind: 'turn';
      startMs: number;
      endMs: number;
      /** When its first words reached the server, on the pipeline clock (orders it among the agent's replies). */
      heardAtMs: number;
      speechEndAt: number;
      transcript: Promise<SettledTranscript>;
      backchannel: boolean;
      /** The reply prepared during the turn's last pause, if any (preemptive replies). */
      speculation: Speculation | undefined;
      /** Where the turn's time went (the reply's TurnTrace); absent for keyed turns. */
      marks?: TurnMarks;
    };

/** The turn of keys the caller pressed (DTMF), answered as their words: `digits` at `atMs` on the call, `now` on the clock. */
export function keyedTurn(digits: string, atMs: number, now: number): PipelineJob {
  const transcript: SettledTranscript = { ok: true, result: { text: digits }, atMs: now };
  return { kind: 'turn', startMs: atMs, endMs: atMs, heardAtMs: atMs, speechEndAt: now, transcript: Promise.resolve(transcript), backchannel: false, speculation: undefined };
}
