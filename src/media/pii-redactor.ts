import { CappedMap } from '../lib/capped-map.ts';
import type { Call, CallChanges } from '../domain/call.ts';
import type { PiiRedactor } from '../services/call-retention.ts';
import { formatTranscript, fromTranscriptObject, redactText, redactTranscript, toTranscriptObject } from '../voice/index.ts';
import { extractName } from '../voice/engines/extract.ts';
import type { RecordingStore } from '../services/recording-store.ts';

/** Names remembered per call, at most this many calls (ended calls are finished within seconds). */
const MAX_REMEMBERED = 10_000;

/**
 * The `everything_except_pii` policy for web calls: the transcript (and the analysis summary,
 * which quotes the user) has e-mails, digit runs of 4+ (phone, card, account numbers) and the
 * names the flow captured replaced by `[email]`, `[number]`, `[name]`; the recording is kept
 * with every redacted utterance's time span silenced on both channels (the whole utterance:
 * recognisers give no word timings). `transcript_with_tool_calls` gets the same treatment: its
 * utterances, function arguments and function results.
 *
 * Names: the session hands over the names its flow extracted just before the call is finished.
 * When the policy is tightened later (update-call), those are gone from memory, so names are
 * found again in the user's words ("my name is ...", "this is ...", "call me ...").
 */
export class TranscriptPiiRedactor implements PiiRedactor {
  readonly #recordings: RecordingStore;
  readonly #names = new CappedMap<string, readonly string[]>(MAX_REMEMBERED);

  constructor(options: { recordings: RecordingStore }) {
    this.#recordings = options.recordings;
  }

  /** Called by the call session before finishCall. */
  rememberNames(callId: string, names: readonly string[]): void {
    this.#names.set(callId, names);
  }

  async redact(row: Call): Promise<CallChanges> {
    const names = new Set(this.#names.get(row.call_id) ?? []);
    this.#names.delete(row.call_id);
    const entries = row.transcript_object;
    const changes: CallChanges = {};
    if (entries && Array.isArray(entries)) {
      const utterances = fromTranscriptObject(entries);
      for (const u of utterances) {
        if (u.role !== 'user') continue;
        const introduced = /\b(my name is|my name's|this is|call me)\b/i.test(u.text) ? extractName(u.text) : undefined;
        if (introduced) names.add(introduced);
      }
      const result = redactTranscript(utterances, { names: [...names] });
      changes.transcript_object = toTranscriptObject(result.utterances);
      changes.transcript = formatTranscript(result.utterances) || null;
      if (row.recording_path && result.spans.length > 0) {
        try {
          await this.#recordings.silence(row.call_id, row.recording_path, result.spans);
        } catch {
          // A recording that cannot be redacted is not kept.
          await this.#recordings.delete(row.call_id, row.recording_path).catch(() => {});
          changes.recording_path = null;
        }
      }
    } else if (row.transcript) {
      changes.transcript = redactText(row.transcript, [...names]).text;
    }
    // Function calls carry what the user said (arguments) and what the backend knows of them (results).
    const withTools = row.transcript_with_tool_calls;
    if (withTools && Array.isArray(withTools)) {
      const nameList = [...names];
      changes.transcript_with_tool_calls = withTools.map((e) =>
        e.role === 'node_transition'
          ? e
          : e.role === 'knowledge_base_retrieval'
            ? // The account's documents, redacted as the transcript is: a name the caller gave may be in them.
              { ...e, chunks: e.chunks.map((c) => ({ ...c, text: redactText(c.text, nameList).text })) }
          : e.role === 'tool_call_invocation'
            ? { ...e, arguments: redactText(e.arguments, nameList).text }
            : { ...e, content: redactText(e.content, nameList).text },
      );
    }
    const analysis = row.call_analysis;
    if (analysis && typeof analysis.call_summary === 'string') {
      changes.call_analysis = { ...analysis, call_summary: redactText(analysis.call_summary, [...names]).text };
      // Custom fields may hold what the caller said (a name, a number): their text is redacted too.
      if (analysis.custom_analysis_data) {
        const redacted = Object.entries(analysis.custom_analysis_data).map(([k, v]) => [k, typeof v === 'string' ? redactText(v, [...names]).text : v]);
        changes.call_analysis.custom_analysis_data = Object.fromEntries(redacted) as typeof analysis.custom_analysis_data;
      }
    }
    return changes;
  }
}
