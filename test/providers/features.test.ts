// A feature that needs a capability checks it and says so: preemptive replies prepare the answer
// from the interim transcript, so they need a recogniser with interim results
// (src/providers/features.ts; the call session reads it, `cli doctor` reports it).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeepgramStt } from '../../src/providers/deepgram/deepgram.stt.ts';
import { FakeStt } from '../../src/providers/fake/fake.providers.ts';
import { preemptiveRepliesAvailable } from '../../src/providers/features.ts';
import { OpenAiTranscriptionStt } from '../../src/providers/openai/transcription.stt.ts';
import { PocketsphinxStt } from '../../src/providers/pocketsphinx/pocketsphinx.stt.ts';

describe('preemptiveRepliesAvailable', () => {
  it('runs on a recogniser with interim results', () => {
    assert.deepEqual(preemptiveRepliesAvailable(new DeepgramStt()), { ok: true, why: 'deepgram gives interim results: preemptive replies can run' });
    assert.equal(preemptiveRepliesAvailable(new FakeStt([], { interims: true })).ok, true);
    assert.equal(preemptiveRepliesAvailable(new PocketsphinxStt({ mode: 'library' })).ok, true);
  });

  it('is off on batch transcription, and says why in words an operator can act on', () => {
    const stt = new OpenAiTranscriptionStt({ baseUrl: 'http://127.0.0.1:9/v1', model: 'whisper-1' });
    assert.deepEqual(preemptiveRepliesAvailable(stt), {
      ok: false,
      why: 'openai-transcription transcribes whole utterances: no interim results, so preemptive replies are off',
    });
    assert.deepEqual(preemptiveRepliesAvailable(stt, 'STT_PROVIDER=openai'), {
      ok: false,
      why: 'STT_PROVIDER=openai transcribes whole utterances: no interim results, so preemptive replies are off',
    });
    assert.equal(preemptiveRepliesAvailable(new FakeStt()).ok, false, 'the fake without interims answers like a batch recogniser');
  });

  it('is off on PocketSphinx decoding one process per utterance (its library did not load)', () => {
    assert.deepEqual(preemptiveRepliesAvailable(new PocketsphinxStt({ mode: 'process' })), {
      ok: false,
      why: 'pocketsphinx decodes while the caller speaks but gives no interim results, so preemptive replies are off',
    });
  });

  it('is off on a recogniser that states no capabilities', () => {
    const fake = new FakeStt([], { interims: true });
    const undescribed = { id: 'custom', languages: () => fake.languages(), openStream: fake.openStream.bind(fake) };
    assert.deepEqual(preemptiveRepliesAvailable(undescribed), {
      ok: false,
      why: 'custom states no capabilities, so no interim results: preemptive replies are off',
    });
  });
});
