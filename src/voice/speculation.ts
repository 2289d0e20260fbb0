/**
 * Preemptive replies: while the caller pauses after words that complete a sentence, the reply to
 * what the recogniser has heard so far is prepared (engine and synthesis, held before its first
 * audio and before any side effect) on a checkpoint of the engine. The turn's end confirms it (it
 * plays) or drops it (the engine is rolled back, as if it had never run).
 */
import { completeness } from './end-of-turn.ts';
import type { ResponseEngine } from './engines/types.ts';
import type { HeldReply, TurnTiming } from './reply.ts';

/** A reply prepared for a turn the caller may not have finished. */
export interface Speculation {
  /** The interim transcript it answers. */
  readonly text: string;
  readonly ctrl: AbortController;
  /** The turn ended with this text: the reply may play. */
  confirm(turn: TurnTiming): void;
  /** The reply began to play. */
  opened: boolean;
  /** Settles once the reply has played, or was dropped and the engine rolled back. */
  done: Promise<void>;
}

export interface SpeculationHost {
  readonly engine: ResponseEngine;
  /** Preemptive replies are on (the agent's `preemptive_replies`). */
  readonly enabled: boolean;
  /** Runs a held reply to `text` (Replies.run with `held`). */
  run(text: string, held: HeldReply): Promise<void>;
}

/** The preemptive replies of one pipeline. */
export class Speculations {
  readonly #h: SpeculationHost;
  /** The reply prepared for the open turn, not yet handed to a turn. */
  #pending: Speculation | undefined;
  /** Every speculation not settled yet (close() waits for their rollback). */
  readonly #all = new Set<Speculation>();
  /** Settles once every dropped speculation has rolled the engine back. */
  #rollback: Promise<void> = Promise.resolve();
  readonly #counts = { used: 0, dropped: 0 };

  constructor(host: SpeculationHost) {
    this.#h = host;
  }

  /** Settles once the engine is back where the turn began, if a prepared reply was dropped. */
  get rollback(): Promise<void> {
    return this.#rollback;
  }

  /** Preemptive replies so far: played (`used`) and thrown away (`dropped`). */
  counts(): { used: number; dropped: number } {
    return { ...this.#counts };
  }

  /**
   * The caller has paused: prepares the reply to `text` (what the recogniser heard so far) when it
   * completes a sentence and `idle` says the agent has nothing else to do; a new hypothesis
   * replaces the one prepared.
   */
  consider(text: string, idle: boolean): void {
    const heard = text.trim();
    if (this.#pending && sameWords(this.#pending.text, heard)) return;
    this.dropPending();
    const engine = this.#h.engine;
    if (!this.#h.enabled || !engine.checkpoint || !idle) return;
    if (!heard || completeness(heard) === 'incomplete') return;
    const ctrl = new AbortController();
    let confirm!: (turn: TurnTiming) => void;
    const confirmed = new Promise<TurnTiming>((resolve) => (confirm = resolve));
    const spec: Speculation = { text: heard, ctrl, confirm, opened: false, done: Promise.resolve() };
    const after = this.#rollback;
    spec.done = (async () => {
      await after;
      if (ctrl.signal.aborted) return;
      const restore = engine.checkpoint!();
      try {
        await this.#h.run(heard, { ctrl, confirmed, onOpen: () => (spec.opened = true) });
      } finally {
        if (!spec.opened) restore();
        this.#all.delete(spec);
      }
    })();
    this.#all.add(spec);
    this.#pending = spec;
  }

  /** The caller goes on (speech again, a new hypothesis): the prepared reply is thrown away. */
  dropPending(): void {
    const spec = this.#pending;
    this.#pending = undefined;
    if (spec) this.drop(spec);
  }

  /** The turn has ended: what was prepared for it is its own now, whatever the caller says next. */
  takePending(): Speculation | undefined {
    const spec = this.#pending;
    this.#pending = undefined;
    return spec;
  }

  /** Whether `spec` answers exactly `text` (the turn's final words), whatever the case and punctuation. */
  answers(spec: Speculation, text: string): boolean {
    return sameWords(spec.text, text);
  }

  /** Throws a prepared reply away; `rollback` settles once the engine is rolled back. */
  drop(spec: Speculation): void {
    spec.ctrl.abort();
    this.#counts.dropped++;
    this.#rollback = Promise.all([this.#rollback, spec.done]).then(() => undefined);
  }

  /** A confirmed reply played. */
  used(): void {
    this.#counts.used++;
  }

  /** Aborts every speculation (the call is closing) and resolves once each has rolled back. */
  async close(): Promise<void> {
    for (const spec of this.#all) spec.ctrl.abort();
    await Promise.allSettled([...this.#all].map((spec) => spec.done));
  }
}

/** The same words, whatever the case and punctuation ("Yes, please." and "yes please"). */
export function sameWords(a: string, b: string): boolean {
  const norm = (t: string) => t.toLowerCase().replace(/[^\p{L}\p{N}' ]+/gu, ' ').split(/\s+/).filter(Boolean).join(' ');
  return norm(a) === norm(b);
}
