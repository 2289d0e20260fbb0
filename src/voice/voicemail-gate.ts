/**
 * Voicemail detection in a call (issue 24): a VoicemailDetector fed with the callee's audio and
 * words, and the response engine wrapped so that the agent does not talk over a greeting. Until
 * the detector decides, the agent's opening and its replies wait (and cannot be interrupted:
 * the greeting would cancel them); then
 * - a person: the opening plays; what the callee said before the decision ("Hello?") stays in
 *   the transcript and, when the agent speaks first, is not answered on top of the opening;
 * - a machine: the voicemail action instead of the conversation: hang up at once, or wait for the
 *   message window (the beep's end, or the greeting's end), speak the message (uninterruptible)
 *   and hang up; the call ends `voicemail_reached` either way.
 * A reply prepared before its turn ended (a preemptive reply: RespondOptions.confirmed) for words
 * heard during detection never speaks on its own: on a machine it yields nothing (the voicemail
 * action belongs to a confirmed turn or the unprompted reply the machine's decision starts, and a
 * prepared reply may be thrown away); on a person who the agent greets first it yields nothing
 * either (the opening answers the "Hello?"); only when the callee speaks first does it answer.
 */
import { abortable } from '../lib/abortable.ts';
import { overrideEngine } from './engine-override.ts';
import type { EngineOutput, ResponseEngine, RespondOptions } from './engines/types.ts';
import { type VoicemailDecision, VoicemailDetector } from './voicemail-detector.ts';

/** What the agent does on a machine: Retell's `voicemail_option.action`. */
export type VoicemailAction = { type: 'hangup' } | { type: 'static_text'; text: string } | { type: 'prompt'; text: string };

export interface VoicemailGateOptions {
  /** The detection window, ms (Retell's `voicemail_detection_timeout_ms`; bounded by the detector). */
  timeoutMs: number;
  /** The rate of the callee's audio, Hz (the call's); default 16000. */
  sampleRateHz?: 8000 | 16000;
  action: VoicemailAction;
  /** Who speaks first: with 'agent', words heard before the decision are not answered after the opening. */
  startSpeaker: 'agent' | 'user';
  /** Writes the message of a `prompt` action (an LLM); absent or failing, the call hangs up without one. */
  writeMessage?: (prompt: string, signal: AbortSignal) => Promise<string>;
  /** Each decision as it comes (the call's logs; the call record). */
  onDecision?: (decision: VoicemailDecision) => void;
  /** A machine was decided: the owner makes sure a reply runs (VoicePipeline.speakUnprompted) to act on it. */
  onMachine?: () => void;
  /** Where the callee's last utterance the pipeline answers began, on the pipeline's timeline, ms (undefined: none). */
  lastUserStartMs: () => number | undefined;
  /** The pipeline's timeline now, ms. */
  elapsedMs: () => number;
}

type Verdict = 'human' | 'machine';

export class VoicemailGate {
  readonly #o: VoicemailGateOptions;
  readonly #detector: VoicemailDetector;
  #verdict: Verdict | undefined;
  #resolveVerdict!: (v: Verdict) => void;
  readonly #decided = new Promise<Verdict>((resolve) => (this.#resolveVerdict = resolve));
  #openWindow!: () => void;
  readonly #window = new Promise<void>((resolve) => (this.#openWindow = resolve));
  /** Where the human was decided on the pipeline's timeline, ms. */
  #humanAtMs = 0;
  #acted = false;

  constructor(options: VoicemailGateOptions) {
    this.#o = options;
    this.#detector = new VoicemailDetector({ timeoutMs: options.timeoutMs, ...(options.sampleRateHz ? { sampleRateHz: options.sampleRateHz } : {}) });
  }

  /** The detector's verdict so far: `in_voicemail` of the call's analysis (undefined: none yet). */
  get inVoicemail(): boolean | undefined {
    return this.#verdict === undefined ? undefined : this.#verdict === 'machine';
  }

  /** The callee's audio (mono PCM at the call's rate, `sampleRateHz`). */
  audio(pcm: Int16Array): void {
    if (this.#detector.listening) this.#apply(this.#detector.push(pcm));
  }

  /** What the recogniser heard of the callee (interim or final). */
  heard(text: string): void {
    if (this.#detector.listening) this.#apply(this.#detector.hear(text));
  }

  /** Ends the wait: nothing decided is a person (the call is ending anyway). */
  close(): void {
    this.#resolveVerdict('human');
    this.#openWindow();
  }

  #apply(decisions: readonly VoicemailDecision[]): void {
    for (const d of decisions) {
      this.#o.onDecision?.(d);
      if (d.kind === 'message_window') {
        this.#openWindow();
        continue;
      }
      this.#verdict = d.kind;
      if (d.kind === 'human') this.#humanAtMs = this.#o.elapsedMs();
      this.#resolveVerdict(d.kind);
      if (d.kind === 'machine') this.#o.onMachine?.();
    }
  }

  /** `engine`, held until the verdict and replaced by the voicemail action on a machine. */
  wrap(engine: ResponseEngine): ResponseEngine {
    const gate = this;
    const begin = async function* (signal: AbortSignal): AsyncIterable<EngineOutput> {
      if ((await gate.#wait(signal)) === 'machine') return yield* gate.#leaveMessage(signal);
      yield* engine.begin(signal);
    };
    const respond = async function* (text: string, signal: AbortSignal, options?: RespondOptions): AsyncIterable<EngineOutput> {
      // Words heard before the verdict (a reply is asked for after its words were heard).
      const heardWhileDeciding = gate.#verdict === undefined;
      const prepared = options?.confirmed !== undefined;
      if ((await gate.#wait(signal)) === 'machine') {
        // A prepared reply may yet be thrown away: it must not take the one voicemail action.
        if (prepared) return;
        return yield* gate.#leaveMessage(signal);
      }
      // The callee's words before a person was decided were the reason the opening waited: the
      // opening answers them; a reply to them after it would talk twice. A prepared reply's turn
      // has not ended, so lastUserStartMs is not its own: the time it was asked for says.
      const startMs = gate.#o.lastUserStartMs();
      const beforeHuman = heardWhileDeciding || (startMs !== undefined && startMs < gate.#humanAtMs);
      if (gate.#o.startSpeaker === 'agent' && beforeHuman) return;
      yield* engine.respond(text, signal, options);
    };
    const unprompted = async function* (signal: AbortSignal): AsyncIterable<EngineOutput> {
      if (gate.#verdict === 'machine') return yield* gate.#leaveMessage(signal);
      if (engine.unprompted) yield* engine.unprompted(signal);
    };
    // Held replies cannot be cut by the greeting; on a machine nothing can (its greeting plays on
    // as the hang-up or the message waits, and the message is not for barging in on).
    const interruptible = () => (gate.#verdict !== 'human' ? false : (engine.interruptible?.() ?? true));
    return overrideEngine(engine, { begin, respond, unprompted, interruptible });
  }

  async #wait(signal: AbortSignal): Promise<Verdict | undefined> {
    if (this.#verdict) return this.#verdict;
    try {
      return await abortable(this.#decided, signal);
    } catch {
      return undefined;
    }
  }

  /** The voicemail action, once per call: later replies say nothing (the call is ending). */
  async *#leaveMessage(signal: AbortSignal): AsyncIterable<EngineOutput> {
    if (this.#acted) return;
    this.#acted = true;
    const action = this.#o.action;
    if (action.type !== 'hangup') {
      try {
        await abortable(this.#window, signal);
        const text = action.type === 'static_text' ? action.text : await this.#write(action.text, signal);
        if (text) yield { type: 'text', text };
      } catch {
        if (signal.aborted) return;
      }
    }
    yield { type: 'hangup', reason: 'voicemail_reached' };
  }

  async #write(prompt: string, signal: AbortSignal): Promise<string> {
    if (!this.#o.writeMessage) return '';
    return (await this.#o.writeMessage(prompt, signal)).trim();
  }
}
