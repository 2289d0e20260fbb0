/**
 * Where a call's engine is (its flow node or service-LLM state) and, for a conversation flow, the
 * moves it made: every node the engine entered, also those a reply passed through without waiting
 * for the user (a function node), kept for the call object's `node_transition` entries whatever
 * carries the call (the caller's `node_changed` events are only what it saw live), at most
 * NODE_TRANSITIONS_PER_CALL.
 */
import type { EngineSnapshot } from '../domain/agent.ts';
import { NODE_TRANSITIONS_PER_CALL, type TimedNodeTransition } from '../voice/index.ts';

/** What the built engine says of where it is: now, and every position it entered (a rollback shortens it). */
export interface EnginePosition {
  position(): string | undefined;
  path?(): readonly string[];
}

export class NodePath {
  readonly #engine: EnginePosition;
  readonly #isFlow: boolean;
  readonly #names: ReadonlyMap<string, string>;
  /** The flow's function nodes: a move from one is placed at its last function-call record. */
  readonly #functionNodes: ReadonlySet<string>;
  readonly #moves: TimedNodeTransition[] = [];
  /** How many of the engine's path entries have been gone through. */
  #seen = 0;
  #last: string | undefined;
  /** When the last function-call record happened (ms since the pipeline started). */
  #lastToolCallAtMs: number | undefined;

  constructor(engine: EnginePosition, definition: EngineSnapshot) {
    this.#engine = engine;
    this.#isFlow = definition.type === 'conversation_flow';
    const nodes = definition.type === 'conversation_flow' ? definition.definition.nodes : [];
    this.#names = new Map(nodes.flatMap((n) => (n.name ? [[n.id, n.name] as const] : [])));
    this.#functionNodes = new Set(nodes.filter((n) => n.type === 'function').map((n) => n.id));
    this.#last = engine.position();
  }

  /** Where the engine is now (null: nowhere, as the call object says it). */
  position(): string | null {
    return this.#engine.position() ?? null;
  }

  /** The flow's moves so far, in order. */
  get transitions(): readonly TimedNodeTransition[] {
    return this.#moves;
  }

  /** A function call was recorded at `atMs`. */
  toolCallAt(atMs: number): void {
    this.#lastToolCallAtMs = atMs;
  }

  /**
   * Goes through the moves made since last asked, and then to where the engine is now, telling
   * `moved` of each (from null: the agent had no node or state before). `atMs`: where the moves are
   * placed on the call's timeline.
   */
  check(atMs: number, moved: (from: string | null, to: string) => void): void {
    const path = this.#engine.path?.() ?? [];
    // A rollback (a preemptive reply discarded) can shorten the path: go on from where it is.
    this.#seen = Math.min(this.#seen, path.length);
    for (; this.#seen < path.length; this.#seen++) this.#moveTo(path[this.#seen]!, atMs, moved);
    const now = this.#engine.position();
    if (now !== undefined) this.#moveTo(now, atMs, moved);
  }

  #moveTo(now: string, atMs: number, moved: (from: string | null, to: string) => void): void {
    if (now === this.#last) return;
    const from = this.#last ?? null;
    this.#last = now;
    if (from !== null) this.#keep(from, now, atMs);
    moved(from, now);
  }

  #keep(from: string, to: string, atMs: number): void {
    if (!this.#isFlow || this.#moves.length >= NODE_TRANSITIONS_PER_CALL) return;
    const fromName = this.#names.get(from);
    const toName = this.#names.get(to);
    // A function node is left once its request is answered (or sent, when not waited for), often
    // within the reply that began there: the move goes right after that record, not where it was seen.
    const callAtMs = this.#functionNodes.has(from) ? this.#lastToolCallAtMs : undefined;
    this.#moves.push({
      from,
      to,
      atMs: Math.max(0, callAtMs ?? atMs),
      ...(callAtMs !== undefined ? { afterCall: true } : {}),
      ...(fromName ? { fromName } : {}),
      ...(toName ? { toName } : {}),
    });
  }
}
