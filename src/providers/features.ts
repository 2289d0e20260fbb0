import type { SttProvider } from './stt.ts';

/** Whether a feature can run with the providers at hand, and why (or why not), for logs and `cli doctor`. */
export interface FeatureCheck {
  readonly ok: boolean;
  /** One sentence an operator can act on, naming the recogniser. */
  readonly why: string;
}

/**
 * Whether preemptive replies (the agent setting `preemptive_replies`) can run on recogniser `stt`:
 * they prepare the answer from the interim transcript, so they need interim results
 * (SttCapabilities.interimResults). A recogniser that states no capabilities is taken to have none.
 * `name` is how `why` names the recogniser: its id by default, `STT_PROVIDER=openai` in `cli doctor`.
 */
export function preemptiveRepliesAvailable(stt: Pick<SttProvider, 'id' | 'capabilities'>, name: string = stt.id): FeatureCheck {
  const capabilities = stt.capabilities;
  if (!capabilities) return { ok: false, why: `${name} states no capabilities, so no interim results: preemptive replies are off` };
  if (capabilities.interimResults) return { ok: true, why: `${name} gives interim results: preemptive replies can run` };
  if (!capabilities.streaming) return { ok: false, why: `${name} transcribes whole utterances: no interim results, so preemptive replies are off` };
  return { ok: false, why: `${name} decodes while the caller speaks but gives no interim results, so preemptive replies are off` };
}
