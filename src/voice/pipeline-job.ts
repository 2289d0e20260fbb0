/** The work the voice pipeline's respond loop takes, one at a time (src/voice/pipeline.ts). */
import type { SettledTranscript } from './stages/stt.stage.ts';
import type { Speculation } from './speculation.ts';

/** One piece of work for the pipeline's respond loop: the opening, unprompted speech, a user turn. */
export type PipelineJob =
  | { kind: 'begin' }
  | { kind: 'unprompted' }
  | {
      kind: 'turn';
      startMs: number;
      endMs: number;
      speechEndAt: number;
      transcript: Promise<SettledTranscript>;
      backchannel: boolean;
      /** The reply prepared during the turn's last pause, if any (preemptive replies). */
      speculation: Speculation | undefined;
    };
