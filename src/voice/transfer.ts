/**
 * The end of a reply that asked to hang up or transfer the call (EngineHangup), once its words
 * have played. A transfer (issue 24) is made here, while the call still runs, so that a refusal
 * can come back to the engine: a flow's transfer_call node then takes its failure edge.
 */
import type { EngineHangup, ResponseEngine } from './engines/types.ts';
import type { HangupReason } from './pipeline.types.ts';

export interface HangupSteps {
  engine: ResponseEngine;
  /** Hands the call over (the endpoint's REFER or `<Dial>`); absent: the call cannot be transferred. */
  transfer: ((destination: string) => Promise<void>) | undefined;
  /** Ends the pipeline; `transferredTo` once the carrier took the call on. */
  end(reason: HangupReason, transferredTo?: string): void;
  /** The engine has words after a refused transfer: speak them (VoicePipeline.speakUnprompted). */
  resume(): void;
}

/**
 * A hang-up ends the call. A transfer ends it `call_transfer` once the carrier took the call on;
 * refused (or impossible), the engine is told (ResponseEngine.transferFailed) and goes on when it
 * can, else the call ends `agent_hangup`.
 */
export async function settleHangup(ending: EngineHangup, steps: HangupSteps): Promise<void> {
  if (ending.reason !== 'call_transfer') return steps.end(ending.reason);
  try {
    if (!steps.transfer) throw new Error('this call cannot be transferred');
    await steps.transfer(ending.destination);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    if (steps.engine.transferFailed?.(ending.destination, why) && steps.engine.unprompted) steps.resume();
    else steps.end('agent_hangup');
    return;
  }
  steps.end('call_transfer', ending.destination);
}
