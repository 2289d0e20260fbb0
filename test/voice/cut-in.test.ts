// No early cut-ins: callers who pause 400-700 ms in the middle of a sentence ("i would like to
// ... book an appointment", "my number is five five five ... one two three four") are not
// answered at the pause. Flite speech through the embedded recogniser, in real time; the
// early-reply rate must stay at or under 5 % (the benchmark reports it too: bench/voice.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hasPocketsphinx, NO_POCKETSPHINX } from './capabilities.ts';
import { CUT_IN_SET, runCutInSet } from './cut-in-set.ts';

test('the early-reply rate over the paused-utterance set is at most 5 %, and every utterance is answered', { timeout: 240_000 }, async (t) => {
  if (!hasPocketsphinx()) return t.skip(NO_POCKETSPHINX);
  // One caller at a time: two at once, beside the suite's other files, left the recogniser too far
  // behind real time to answer within the wait (a CI run: 0 early, one unanswered).
  const results = await runCutInSet({ responsiveness: 1, minSilenceMs: 250, maxSilenceMs: 1200 });
  assert.equal(results.length, CUT_IN_SET.length);
  assert.ok(CUT_IN_SET.every((u) => u.pauseMs >= 400 && u.pauseMs <= 700));
  const early = results.filter((r) => r.early);
  const detail = JSON.stringify(early.map((r) => ({ said: `${r.utterance.before} / ${r.utterance.after}`, heard: r.heard })));
  t.diagnostic(`early replies: ${early.length} of ${results.length}`);
  assert.ok(early.length / results.length <= 0.05, `early replies: ${early.length} of ${results.length}: ${detail}`);
  // Not waiting forever instead: every utterance gets its answer once the caller has finished
  // (a bound on being answered at all, loose enough for a loaded machine; `npm run bench -- voice`
  // measures how soon).
  for (const r of results) if (!r.early) assert.ok(r.replyAfterMs !== undefined && r.replyAfterMs < 6_000, JSON.stringify(r));
});
