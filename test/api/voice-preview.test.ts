// Voice previews (issue 27): POST /v2/voice-preview speaks a short text through the configured
// speech engine with an agent's voice settings and answers a real WAV; the speed, volume and voice
// change what is heard; bad input is a 400 naming the field; previews are rate limited per
// account; an engine that cannot be reached is a 503, never a 500.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { decodeWav } from '../../src/lib/wav.ts';
import { DEFAULT_PREVIEWS_PER_MINUTE } from '../../src/services/voice-preview.service.ts';

/** The preview's answer: status, content type and the WAV bytes. */
async function preview(h: Harness, key: string | undefined, body: unknown): Promise<{ status: number; type: string; bytes: Buffer; json: any }> {
  const res = await h.app.inject({ method: 'POST', url: '/v2/voice-preview', headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }, payload: JSON.stringify(body) });
  const type = String(res.headers['content-type'] ?? '');
  return { status: res.statusCode, type, bytes: res.rawPayload, json: type.startsWith('application/json') ? res.json() : null };
}

/** Largest absolute sample. */
function peak(samples: Int16Array): number {
  let max = 0;
  for (const s of samples) max = Math.max(max, Math.abs(s));
  return max;
}

for (const kind of STORES) {
  describe(`voice preview on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    before(async () => {
      h = await startHarness(kind.name);
      ({ apiKey: key } = await h.account());
    });
    after(() => h.close());

    it('speaks the text as a 16 kHz mono WAV; speed, volume and voice change what is heard', async () => {
      const text = 'Thank you for calling Harbor Bikes.';
      const plain = await preview(h, key, { text });
      assert.equal(plain.status, 200, plain.json?.message);
      assert.equal(plain.type, 'audio/wav');
      const audio = decodeWav(plain.bytes);
      assert.deepEqual({ rate: audio.sampleRate, channels: audio.channels }, { rate: 16_000, channels: 1 });
      const seconds = audio.samples.length / 16_000;
      assert.ok(seconds > 1 && seconds < 6, `a sentence lasts about 2 s, got ${seconds} s`);
      assert.ok(peak(audio.samples) > 3000, 'speech, not silence');

      const fast = decodeWav((await preview(h, key, { text, voice_speed: 2 })).bytes);
      assert.ok(fast.samples.length < audio.samples.length * 0.7, `voice_speed 2 is shorter: ${fast.samples.length} vs ${audio.samples.length}`);
      const quiet = decodeWav((await preview(h, key, { text, volume: 0.25 })).bytes);
      assert.ok(peak(quiet.samples) < peak(audio.samples) * 0.3, 'volume 0.25 is quieter');
      const other = decodeWav((await preview(h, key, { text, voice_id: 'flite-slt' })).bytes);
      assert.notDeepEqual(other.samples.subarray(0, 16_000), audio.samples.subarray(0, 16_000), 'another voice sounds different');
      const normalised = decodeWav((await preview(h, key, { text: 'Come on 2026-03-14 at 15:30.', normalize_for_speech: true })).bytes);
      const raw = decodeWav((await preview(h, key, { text: 'Come on 2026-03-14 at 15:30.' })).bytes);
      assert.notEqual(normalised.samples.length, raw.samples.length, 'normalize_for_speech says the date and time as words');
      const said = decodeWav((await preview(h, key, { text: 'Ask for Zorbex.', pronunciation_dictionary: [{ word: 'Zorbex', alphabet: 'cmu', phoneme: 'T AE1 K OW0' }] })).bytes);
      const guessed = decodeWav((await preview(h, key, { text: 'Ask for Zorbex.' })).bytes);
      assert.notDeepEqual(said.samples, guessed.samples, 'the pronunciation dictionary is applied');
    });

    it('refuses bad input with a 400 naming the field, and needs a key', async () => {
      const cases: Array<[unknown, RegExp]> = [
        [{}, /text/],
        [{ text: '' }, /text/],
        [{ text: 'x'.repeat(301) }, /text/],
        [{ text: '   ' }, /text/],
        [{ text: 'Hello', voice_id: '11labs-Adrian' }, /voice_id/],
        [{ text: 'Hello', voice_speed: 3 }, /voice_speed/],
        [{ text: 'Hello', volume: -1 }, /volume/],
        [{ text: 'Hello', pronunciation_dictionary: [{ word: 'a', alphabet: 'klingon', phoneme: 'x' }] }, /pronunciation_dictionary/],
        [{ text: 'Hello', extra: 1 }, /extra/],
      ];
      for (const [body, field] of cases) {
        const res = await preview(h, key, body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.match(res.json.message, field, JSON.stringify(body));
      }
      assert.equal((await preview(h, undefined, { text: 'Hello' })).status, 401);
    });

    it(`allows ${DEFAULT_PREVIEWS_PER_MINUTE} previews a minute per account, then 429; another account is not held back`, async () => {
      const { apiKey: busy } = await h.account();
      for (let i = 0; i < DEFAULT_PREVIEWS_PER_MINUTE; i++) assert.equal((await preview(h, busy, { text: 'Hi.' })).status, 200, `preview ${i + 1}`);
      const refused = await preview(h, busy, { text: 'Hi.' });
      assert.equal(refused.status, 429);
      assert.equal(refused.json.code, 'rate_limited');
      const { apiKey: other } = await h.account();
      assert.equal((await preview(h, other, { text: 'Hi.' })).status, 200);
      h.clock.advance(60_000);
      assert.equal((await preview(h, busy, { text: 'Hi.' })).status, 200, 'the bucket refills');
    });
  });
}

describe('voice preview with a hosted engine that cannot be reached', () => {
  let h: Harness;
  before(async () => {
    // OpenAI-compatible speech at a port nothing listens on: the preview fails as the engine's.
    h = await startHarness('sqlite', { TTS_PROVIDER: 'openai', TTS_BASE_URL: 'http://127.0.0.1:9/v1', STT_PROVIDER: 'openai', STT_BASE_URL: 'http://127.0.0.1:9/v1', PROVIDER_PROBE_TIMEOUT_MS: '0' });
  });
  after(() => h.close());

  it('answers 503 tts_unavailable naming the engine, not a 500', async () => {
    const { apiKey } = await h.account();
    const res = await preview(h, apiKey, { text: 'Hello there.', voice_id: 'alloy' });
    assert.equal(res.status, 503, JSON.stringify(res.json));
    assert.equal(res.json.code, 'tts_unavailable');
    assert.match(res.json.message, /openai/);
  });
});
