import type { Scheduler, TimerHandle } from '../lib/scheduler.ts';

/** What the timers of a conversation do when they fire. */
export interface ConversationTimerActions {
  /** Nobody spoke for the agent's end_call_after_silence_ms: the call ends `inactivity`. */
  inactive(): void;
  /** The user has been silent reminder_trigger_ms since the agent spoke: ask the engine for a reminder. */
  remind(): void;
}

/**
 * The silence timers of one conversation: inactivity (nobody speaks for `silenceMs`; while the
 * agent talks it waits for the agent to finish) and reminders (after the agent finished speaking,
 * one after `reminder.afterMs` of the user's silence, at most `reminder.max` in a row).
 */
export class ConversationTimers {
  readonly #scheduler: Scheduler;
  readonly #silenceMs: number;
  readonly #reminder: { afterMs: number; max: number } | undefined;
  readonly #act: ConversationTimerActions;
  #silence: TimerHandle | undefined;
  #remind: TimerHandle | undefined;
  #remindersSent = 0;
  #agentTalking = false;
  #stopped = false;

  constructor(scheduler: Scheduler, silenceMs: number, reminder: { afterMs: number; max: number } | undefined, act: ConversationTimerActions) {
    this.#scheduler = scheduler;
    this.#silenceMs = silenceMs;
    this.#reminder = reminder;
    this.#act = act;
  }

  /** Arms the inactivity timer (the call's start). */
  start(): void {
    this.#armSilence();
  }

  agentStarted(): void {
    this.#agentTalking = true;
  }

  /** The agent stopped talking; after a whole reply (not cut off), a reminder is armed. */
  agentStopped(cutOff: boolean): void {
    this.#agentTalking = false;
    this.#armSilence();
    if (!cutOff) this.#armReminder();
  }

  /** The user began to speak: the silence starts again and the reminders count from zero. */
  userStarted(): void {
    this.#armSilence();
    this.#remindersSent = 0;
    if (this.#remind) this.#scheduler.clear(this.#remind);
  }

  /** Disarms everything; idempotent. */
  stop(): void {
    this.#stopped = true;
    if (this.#silence) this.#scheduler.clear(this.#silence);
    if (this.#remind) this.#scheduler.clear(this.#remind);
  }

  #armSilence(): void {
    if (this.#stopped) return;
    if (this.#silence) this.#scheduler.clear(this.#silence);
    this.#silence = this.#scheduler.setTimeout(() => {
      if (this.#agentTalking) this.#armSilence();
      else this.#act.inactive();
    }, this.#silenceMs);
  }

  #armReminder(): void {
    const r = this.#reminder;
    if (!r || this.#stopped) return;
    if (this.#remind) this.#scheduler.clear(this.#remind);
    if (this.#remindersSent >= r.max) return;
    this.#remind = this.#scheduler.setTimeout(() => {
      if (this.#agentTalking || this.#stopped) return;
      this.#remindersSent += 1;
      this.#act.remind();
    }, r.afterMs);
  }
}
