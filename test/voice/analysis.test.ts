import { test } from 'node:test';
import assert from 'node:assert/strict';
import { analyzeCall, embeddedAnalysis, lexiconSentiment } from '../../src/voice/analysis.ts';
import { redactTranscript, redactText } from '../../src/voice/redact.ts';
import { summarizeLatency, latencyReport } from '../../src/voice/latency.ts';
import { decodeWav, encodeWav, interleaveStereo, silenceSpan } from '../../src/lib/wav.ts';
import { FakeLlm } from '../../src/providers/fake/fake.providers.ts';
import { formatTranscript, type Utterance } from '../../src/voice/transcript.ts';

const transcript: Utterance[] = [
  { role: 'agent', text: 'Hello, how can I help?', startMs: 0, endMs: 1500 },
  { role: 'user', text: 'my name is john and my number is five five five one two three four', startMs: 2000, endMs: 6000 },
  { role: 'agent', text: 'Thanks John, great.', startMs: 6500, endMs: 7500, cutOff: true },
  { role: 'user', text: 'thank you that is great, email john@example.com', startMs: 8000, endMs: 10000 },
];

test('embedded analysis is never blank', () => {
  const a = embeddedAnalysis({ transcript, disconnectionReason: 'agent_hangup', reachedEnd: true });
  assert.equal(a.call_successful, true);
  assert.equal(a.user_sentiment, 'Positive');
  assert.match(a.call_summary, /The agent opened with: "Hello, how can I help\?"/);
  assert.match(a.call_summary, /interrupted the agent 1 time/);
  const empty = embeddedAnalysis({ transcript: [], disconnectionReason: 'error_asr' });
  assert.equal(empty.call_successful, false);
  assert.ok(empty.call_summary.length > 0);
  assert.equal(empty.user_sentiment, 'Unknown');
  assert.equal(lexiconSentiment(['this is not good, terrible service']), 'Negative');
  assert.equal(lexiconSentiment(['what time is it']), 'Neutral');
});

test('LLM analysis is parsed, and falls back to the embedded method on garbage', async () => {
  const llm = new FakeLlm(['{"call_summary":"Caller booked.","call_successful":true,"user_sentiment":"Positive"}', 'not json']);
  assert.deepEqual(await analyzeCall({ transcript, llm }), { call_summary: 'Caller booked.', call_successful: true, user_sentiment: 'Positive' });
  const fb = await analyzeCall({ transcript, llm, disconnectionReason: 'user_hangup' });
  assert.equal(fb.call_successful, false);
  assert.ok(fb.call_summary.length > 0);
  assert.ok(llm.requests[0]?.json);
});

test('an analysis whose signal has already aborted (a shutdown deadline) is the embedded one, without asking the LLM', async () => {
  const llm = new FakeLlm(['{"call_summary":"Caller booked.","call_successful":true,"user_sentiment":"Positive"}']);
  const input = { transcript, disconnectionReason: 'server_shutdown' };
  assert.deepEqual(await analyzeCall({ ...input, llm, signal: AbortSignal.abort() }), embeddedAnalysis(input));
  assert.equal(llm.requests.length, 0);
});

test('redaction: digits (spoken and written), emails, names; spans to silence', () => {
  assert.equal(redactText('call 555-123-4567 or mail a@b.co').text, 'call [number] or mail [email]');
  assert.equal(redactText('card 4111 1111 1111 1111 ok').text, 'card [number] ok');
  assert.equal(redactText('room 12 at 3').text, 'room 12 at 3', 'short numbers stay');
  const r = redactTranscript(transcript, { names: ['John'] });
  assert.equal(r.utterances[1]?.text, 'my name is [name] and my number is [number]');
  assert.equal(r.utterances[2]?.text, 'Thanks [name], great.');
  assert.equal(r.utterances[3]?.text, 'thank you that is great, email [email]');
  assert.equal(r.utterances[0]?.text, 'Hello, how can I help?');
  assert.deepEqual(r.spans, [{ startMs: 2000, endMs: 6000 }, { startMs: 6500, endMs: 7500 }, { startMs: 8000, endMs: 10000 }]);
  const est = redactTranscript([transcript[1]!], { names: ['John'], spans: 'estimate', paddingMs: 100 });
  assert.ok(est.spans.every((s) => s.startMs >= 2000 && s.endMs <= 6000 && s.endMs - s.startMs < 4000));
  assert.doesNotMatch(formatTranscript(r.utterances), /john|555/i);
});

test('latency summary', () => {
  const s = summarizeLatency([100, 200, 300, 400, 500]);
  assert.deepEqual({ ...s, values: undefined }, { p50: 300, p90: 460, p95: 480, p99: 496, min: 100, max: 500, num: 5, values: undefined });
  assert.deepEqual(summarizeLatency([]).num, 0);
  const r = latencyReport([{ e2eMs: 700, asrMs: 600, llmMs: 1, ttsMs: 30 }]);
  assert.equal(r.e2e.p50, 700);
  assert.deepEqual(r.tts.values, [30]);
});

test('wav: write and read mono and stereo, silence a span', () => {
  const mono = new Int16Array([1, -2, 3, -4, 32767, -32768]);
  const back = decodeWav(encodeWav({ sampleRate: 16000, channels: 1, samples: mono }));
  assert.deepEqual([...back.samples], [...mono]);
  assert.equal(back.sampleRate, 16000);
  const st = interleaveStereo(new Int16Array([1, 2, 3]), new Int16Array([9]));
  const s2 = decodeWav(encodeWav({ sampleRate: 8000, channels: 2, samples: st }));
  assert.equal(s2.channels, 2);
  assert.deepEqual([...s2.samples], [1, 9, 2, 0, 3, 0]);
  const a = { sampleRate: 1000, channels: 1, samples: new Int16Array(10).fill(5) };
  silenceSpan(a, 2, 5);
  assert.deepEqual([...a.samples], [5, 5, 0, 0, 0, 5, 5, 5, 5, 5]);
  assert.throws(() => decodeWav(Buffer.from('nope')));
});
