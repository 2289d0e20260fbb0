import type { StoragePolicy } from '../domain/storage-policy.ts';
import { type Call, type CallChanges, phonePiiChanges } from '../domain/call.ts';
import type { CallRetention } from './call.service.ts';
import type { RecordingStore } from './recording-store.ts';

/**
 * Removes PII from a finished call's transcript and recording. Returns the column changes (e.g. a
 * redacted transcript, and a recording path whose file has the PII spans silenced).
 */
export interface PiiRedactor {
  redact(row: Call): Promise<CallChanges>;
}

/**
 * Enforces storage policies on finished calls, recordings included:
 * - `everything`: keeps all.
 * - `everything_except_pii`: transcript and recording go through the redactor; without one, the
 *   transcript and recording are dropped rather than kept with PII.
 * - `basic_attributes_only`: keeps status, timestamps, duration, latency and reason; the transcript,
 *   recording (deleted from the recording store: its file, or its chunks on PostgreSQL), analysis
 *   and dynamic variables are removed.
 * - Under both, a phone call's far party's number is removed too (domain/call.ts, phonePiiChanges).
 */
export class StoreCallRetention implements CallRetention {
  readonly #recordings: RecordingStore;
  readonly #redactor: PiiRedactor | null;

  constructor(options: { recordings: RecordingStore; redactor?: PiiRedactor | null }) {
    this.#recordings = options.recordings;
    this.#redactor = options.redactor ?? null;
  }

  async apply(row: Call, policy: StoragePolicy): Promise<CallChanges> {
    if (policy === 'everything') return {};
    if (policy === 'everything_except_pii') {
      if (this.#redactor) return { ...(await this.#redactor.redact(row)), ...phonePiiChanges(row) };
      await this.#recordings.delete(row.call_id, row.recording_path);
      return { transcript: null, transcript_object: null, transcript_with_tool_calls: null, recording_path: null, ...phonePiiChanges(row) };
    }
    await this.#recordings.delete(row.call_id, row.recording_path);
    return {
      transcript: null,
      transcript_object: null,
      transcript_with_tool_calls: null,
      recording_path: null,
      call_analysis: null,
      service_llm_dynamic_variables: null,
      override_dynamic_variables: null,
      ...phonePiiChanges(row),
    };
  }

  async deleteArtifacts(row: Call): Promise<void> {
    await this.#recordings.delete(row.call_id, row.recording_path);
  }
}
