/**
 * Where one reply's time went, for diagnosis (the server's debug log, `turn timing`; the browser
 * bench prints it per turn): not part of the call object, whose `latency` keeps the summaries.
 *
 * Every figure is ms after the caller's last voiced frame was processed (the start of the call's
 * e2e), on the pipeline's clock.
 */
import { judgeEndOfTurn, type EndOfTurnReason, type EndOfTurnSettings } from './end-of-turn.ts';
import type { TurnLatency } from './latency.ts';

/** What ended a turn: the silence asked for at the deciding frame, why, and what the recogniser had then. */
export interface EndOfTurnDecision {
  silenceMs: number;
  reason: EndOfTurnReason;
  /** Audio the recogniser had not decoded (its backlog and the pause held back), ms; null when it cannot tell. */
  pendingMs: number | null;
  /** The interim hypothesis judged. */
  interim: string;
}

/** When a turn's stages happened, besides the latency's own marks (TurnTiming), clock ms. */
export interface TurnMarks {
  /** When the last voiced frame reached the pipeline's input (the VAD had it at TurnTiming.speechEndAt, the e2e's start). */
  voicedReceivedAt: number;
  /** When the silence ended the turn, and why. */
  endedAt: number;
  decision: EndOfTurnDecision | undefined;
}

export interface TurnTrace {
  /** The last voiced frame waited this long in the pipeline's input before the VAD had it. */
  queuedMs: number;
  /** The end-of-turn decision. */
  endOfTurnMs: number;
  /** Undefined with the fixed endpointing (no adaptive end of turn). */
  endOfTurn: EndOfTurnDecision | undefined;
  /** The recogniser's final transcript. */
  finalMs: number;
  /** The engine was asked, and its first text. */
  engineMs: number;
  firstTextMs: number | null;
  /** The synthesiser's first audio, and the first agent frame sent (the e2e). */
  firstAudioMs: number | null;
  e2eMs: number;
  /** The latency record's asr, llm and tts of the turn, for reference. */
  latency: TurnLatency;
}

/** One reply's trace from its turn's marks and the reply's own (clock ms). */
export function turnTrace(
  turn: { speechEndAt: number; transcriptAt: number; marks: TurnMarks },
  reply: { engineAt: number; firstTextAt: number | undefined; firstAudioAt: number | undefined; startedAt: number },
  latency: TurnLatency,
): TurnTrace {
  const after = (at: number) => Math.round(at - turn.speechEndAt);
  return {
    queuedMs: Math.round(turn.speechEndAt - turn.marks.voicedReceivedAt),
    endOfTurnMs: after(turn.marks.endedAt),
    endOfTurn: turn.marks.decision,
    finalMs: after(turn.transcriptAt),
    engineMs: after(reply.engineAt),
    firstTextMs: reply.firstTextAt === undefined ? null : after(reply.firstTextAt),
    firstAudioMs: reply.firstAudioAt === undefined ? null : after(reply.firstAudioAt),
    e2eMs: after(reply.startedAt),
    latency,
  };
}

/**
 * The adaptive end of turn as the turn stage asks it (`endOfTurnMs`), keeping its last judgement:
 * at the frame that ends a turn, that is the decision.
 */
export class EndOfTurnJudge {
  readonly #eot: EndOfTurnSettings;
  readonly #pendingMs: () => number | undefined;
  readonly #interim: () => string;
  #last: EndOfTurnDecision | undefined;

  constructor(eot: EndOfTurnSettings, pendingMs: () => number | undefined, interim: () => string) {
    this.#eot = eot;
    this.#pendingMs = pendingMs;
    this.#interim = interim;
  }

  /** The silence that ends the turn now, ms (TurnOptions.endOfTurnMs). */
  silenceMs(silenceSoFarMs: number): number {
    const pendingMs = this.#pendingMs();
    const interim = this.#interim();
    const judged = judgeEndOfTurn(this.#eot, silenceSoFarMs, pendingMs, interim);
    this.#last = { silenceMs: judged.silenceMs, reason: judged.reason, pendingMs: pendingMs ?? null, interim };
    return judged.silenceMs;
  }

  /** The last judgement: the decision, read when the turn has ended. */
  decision(): EndOfTurnDecision | undefined {
    return this.#last;
  }
}
