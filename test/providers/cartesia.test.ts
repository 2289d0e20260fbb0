// Cartesia text-to-speech (issue 25, item 6) against a local server speaking its TTS WebSocket
// protocol: generation requests with a context_id each, `chunk` messages of base64 PCM, `done`,
// `error`, and `cancel` for a generation given up (barge-in). One socket is shared by the
// generations in flight.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CartesiaTts, type CartesiaOptions } from '../../src/providers/cartesia/cartesia.tts.ts';
import { CARTESIA_LIBRARY_VOICES } from '../../src/providers/cartesia/cartesia.voices.ts';
import { ProviderError } from '../../src/providers/errors.ts';
import { doctor } from '../../src/providers/doctor.ts';
import { loadConfig } from '../../src/config/config.ts';
import { buildProviders, speechCatalog } from '../../src/providers/registry.ts';
import { concat } from '../voice/harness.ts';
import { fakeCartesia } from '../helpers/speech-servers.ts';
import { ttsAtRate } from '../../src/voice/call-rate.ts';

function cartesia(url: string, extra: Partial<CartesiaOptions> = {}): CartesiaTts {
  return new CartesiaTts({ url, apiKey: 'ca-key', model: 'sonic-2', voices: CARTESIA_LIBRARY_VOICES, defaultVoiceId: CARTESIA_LIBRARY_VOICES[0]!.voiceId, connectTimeoutMs: 2000, ...extra });
}

async function collect(it: AsyncIterable<Int16Array>): Promise<Int16Array> {
  const parts: Int16Array[] = [];
  for await (const c of it) parts.push(c);
  return concat(...parts);
}

test('cartesia: generations share one socket, each with its own context_id and its own audio', async () => {
  const srv = await fakeCartesia({ chunks: 3, intervalMs: 5 });
  const tts = cartesia(srv.url);
  try {
    const [a, b] = await Promise.all([
      collect(tts.synthesize('Hello.', { voiceId: 'cartesia-9626c31c-bec5-4cca-baa8-f8ba9e84c8bc' })),
      collect(tts.synthesize('How can I help?')),
    ]);
    assert.equal(a.length, 2400);
    assert.ok(a.every((s) => s === 'Hello.'.length), 'the first generation got its own audio only');
    assert.ok(b.every((s) => s === 'How can I help?'.length) && b.length === 2400);
    await collect(tts.synthesize('Again.'));
    assert.equal(srv.seen.connections, 1, 'one socket for all three');
    assert.equal(srv.seen.headers[0]!['x-api-key'], 'ca-key');
    assert.equal(srv.seen.headers[0]!['cartesia-version'], '2025-04-16');
    const first = srv.seen.requests.find((r) => r.transcript === 'Hello.')!;
    assert.deepEqual({ ...first, context_id: 'id' }, {
      model_id: 'sonic-2',
      transcript: 'Hello.',
      voice: { mode: 'id', id: '9626c31c-bec5-4cca-baa8-f8ba9e84c8bc' },
      language: 'en',
      context_id: 'id',
      output_format: { container: 'raw', encoding: 'pcm_s16le', sample_rate: 16000 },
      continue: false,
    });
    assert.equal(new Set(srv.seen.requests.map((r) => r.context_id)).size, 3, 'a context per generation');
    assert.deepEqual(srv.seen.cancelled, [], 'nothing cancelled when read to the end');
  } finally {
    await tts.close();
    await srv.close();
  }
});

test('cartesia: barge-in cancels its context only; the socket and the other generation go on', async () => {
  const srv = await fakeCartesia({ chunks: -1, intervalMs: 20 });
  const other = await fakeCartesia({ chunks: 4, intervalMs: 20 });
  const tts = cartesia(srv.url);
  try {
    let taken = 0;
    for await (const _ of tts.synthesize('A long answer.')) if (++taken === 2) break;
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(srv.seen.cancelled.length, 1);
    assert.equal(srv.seen.cancelled[0], srv.seen.requests[0]!.context_id, 'the cancel names the generation given up');
    const abort = new AbortController();
    const reading = collect(tts.synthesize('Another.', { signal: abort.signal }));
    setTimeout(() => abort.abort(new DOMException('barge-in', 'AbortError')), 60);
    await assert.rejects(reading, (e: Error) => e.name === 'AbortError');
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(srv.seen.cancelled.length, 2);
    assert.equal(srv.seen.connections, 1, 'the socket was kept');
    // A generation on a socket whose neighbour is cancelled completes.
    const tts2 = cartesia(other.url);
    const [cut, whole] = await Promise.all([
      (async () => { let n = 0; for await (const _ of tts2.synthesize('Cut.')) if (++n === 1) break; return n; })(),
      collect(tts2.synthesize('Whole sentence.')),
    ]);
    assert.equal(cut, 1);
    assert.equal(whole.length, 3200);
    await tts2.close();
  } finally {
    await tts.close();
    await Promise.all([srv.close(), other.close()]);
  }
});

test('cartesia: failures map onto tts provider errors; a dropped socket is replaced for the next sentence', async () => {
  const srv = await fakeCartesia({ chunks: 2, errorFor: 'Bad voice.' });
  const going = await fakeCartesia({ closeWith: 1011 });
  const tts = cartesia(srv.url);
  try {
    const is = (status: number | undefined, retryable: boolean, message: RegExp) => (e: unknown) =>
      e instanceof ProviderError && e.kind === 'tts' && e.provider === 'cartesia' && e.status === status && e.retryable === retryable && message.test(e.message);
    await assert.rejects(collect(cartesia(srv.url, { apiKey: 'refused' }).synthesize('Hi.')), is(401, false, /handshake refused \(HTTP 401: check the API key\)/));
    await assert.rejects(collect(tts.synthesize('Bad voice.')), is(400, false, /Invalid voice/));
    assert.equal((await collect(tts.synthesize('Fine.'))).length, 1600, 'an error of one generation leaves the socket to the others');
    const goingTts = cartesia(going.url);
    await assert.rejects(collect(goingTts.synthesize('Hi.')), is(undefined, true, /closed by the server \(1011: going away\)/));
    await goingTts.close();
    await assert.rejects(collect(cartesia('ws://127.0.0.1:9/tts/websocket').synthesize('Hi.')), is(undefined, true, /connection failed/));
    srv.dropAll();
    await new Promise((r) => setTimeout(r, 50));
    assert.equal((await collect(tts.synthesize('After the drop.'))).length, 1600);
    assert.equal(srv.seen.connections, 2, 'the first socket and its replacement (the refused handshake never opened)');
  } finally {
    await tts.close();
    await Promise.all([srv.close(), going.close()]);
  }
});

test('cartesia: configured, its voices are offered as cartesia-<id>; the doctor checks the key with X-API-Key', async () => {
  const srv = await fakeCartesia();
  try {
    const own = '11111111-2222-3333-4444-555555555555';
    const { media } = loadConfig({ TTS_PROVIDER: 'cartesia', TTS_API_KEY: 'ca-key', TTS_BASE_URL: srv.url, TTS_VOICES: `Agent=${own}` });
    const built = buildProviders(media.providers);
    const { synthesiser } = speechCatalog(built);
    await built.close();
    assert.deepEqual(synthesiser.voices.map((v) => v.voice_id), [`cartesia-${own}`, ...CARTESIA_LIBRARY_VOICES.map((v) => v.voiceId)]);
    assert.equal(synthesiser.voices[0]!.voice_name, 'Agent');
    assert.equal(synthesiser.defaultVoiceId, 'cartesia-f786b574-daa5-4673-aa0c-cbe3e8534c02');
    const line = (await doctor(media.providers, 2000)).find((l) => l.engine === 'cartesia')!;
    assert.equal(line.available, true, line.detail);
    assert.match(line.detail, /reachable \(GET http:\/\/127\.0\.0\.1:\d+\/voices\?limit=1: 200\)/);
    const refused = loadConfig({ TTS_PROVIDER: 'cartesia', TTS_API_KEY: 'nope', TTS_BASE_URL: srv.url }).media;
    assert.equal((await doctor(refused.providers, 2000)).find((l) => l.engine === 'cartesia')!.available, false);
    assert.throws(() => loadConfig({ TTS_PROVIDER: 'cartesia', TTS_VOICES: 'Agent=not-a-uuid' }), /TTS_VOICES entries must be Name=voice-id/);
  } finally {
    await srv.close();
  }
});

test("cartesia: the agent's voice_speed goes as Sonic 3's generation_config, or earlier models' experimental control", async () => {
  const srv = await fakeCartesia({ chunks: 1, intervalMs: 1 });
  const sonic2 = cartesia(srv.url);
  const sonic3 = cartesia(srv.url, { model: 'sonic-3' });
  try {
    await collect(sonic2.synthesize('Slow.', { speed: 0.75 }));
    await collect(sonic2.synthesize('Own rate.', { speed: 1 }));
    await collect(sonic3.synthesize('Fast.', { speed: 2 }));
    const sent = (t: string) => srv.seen.requests.find((r) => r.transcript === t)!;
    assert.deepEqual(sent('Slow.')['__experimental_controls'], { speed: -0.5 });
    assert.equal(sent('Own rate.')['__experimental_controls'], undefined);
    assert.deepEqual(sent('Fast.')['generation_config'], { speed: 1.5 }, "clipped to Sonic 3's range");
  } finally {
    await sonic2.close();
    await sonic3.close();
    await srv.close();
  }
});

test('cartesia: on an 8 kHz call the voice is asked for at sample_rate 8000 and handed on as it came', async () => {
  const srv = await fakeCartesia({ chunks: 3, intervalMs: 5 });
  const tts = cartesia(srv.url);
  try {
    const audio = await collect(ttsAtRate(tts, 8000).synthesize('Hello.'));
    assert.deepEqual(srv.seen.requests[0]!.output_format, { container: 'raw', encoding: 'pcm_s16le', sample_rate: 8000 });
    assert.equal(audio.length, 2400, 'the samples the server sent, none added or lost by a resampler');
  } finally {
    await tts.close();
    await srv.close();
  }
});
