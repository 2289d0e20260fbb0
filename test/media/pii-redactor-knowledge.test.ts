// Under everything_except_pii, the chunks a call's knowledge searches recorded
// (`knowledge_base_retrieval` in transcript_with_tool_calls) are redacted as the transcript is:
// a name the caller gave and numbers are masked in their text; the rest of the entry stays.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Call } from '../../src/domain/call.ts';
import { TranscriptPiiRedactor } from '../../src/media/pii-redactor.ts';
import type { RecordingStore } from '../../src/services/recording-store.ts';

it('redacts the text of recorded knowledge chunks, keeping their ids and scores', async () => {
  const redactor = new TranscriptPiiRedactor({ recordings: {} as RecordingStore });
  redactor.rememberNames('call_1', ['Maria Lopez']);
  const chunk = { text: 'Orders for Maria Lopez ship from 12 Quay Street; call 555 123 4567.', score: 0.5, source_id: 'kb_source_1', knowledge_base_id: 'knowledge_base_1' };
  const row = {
    call_id: 'call_1',
    transcript_object: [],
    transcript: null,
    recording_path: null,
    call_analysis: null,
    transcript_with_tool_calls: [{ role: 'user', content: 'where is my order' }, { role: 'knowledge_base_retrieval', chunks: [chunk] }],
  } as unknown as Call;
  const changes = await redactor.redact(row);
  const entry = changes.transcript_with_tool_calls![1] as { role: string; chunks: Array<typeof chunk> };
  assert.equal(entry.role, 'knowledge_base_retrieval');
  const [redacted] = entry.chunks;
  assert.doesNotMatch(redacted!.text, /Maria|Lopez|555 123 4567/);
  assert.match(redacted!.text, /^Orders for /);
  assert.deepEqual({ ...redacted, text: undefined }, { ...chunk, text: undefined });
});
