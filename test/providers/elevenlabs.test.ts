// ElevenLabs text-to-speech (issue 25, item 6) against a local server speaking its stream-input
// WebSocket protocol: the opening message, the text with flush, the closing empty text; base64
// PCM `audio` chunks with alignment, then `isFinal`. Barge-in closes the socket; failures map onto
// the provider error kinds; the latency record's tts figure is the time to the first audio.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ElevenLabsTts, type ElevenLabsOptions } from '../../src/providers/elevenlabs/elevenlabs.tts.ts';
import { ELEVENLABS_PREMADE_VOICES } from '../../src/providers/elevenlabs/elevenlabs.voices.ts';
import { ProviderError } from '../../src/providers/errors.ts';
import { doctor } from '../../src/providers/doctor.ts';
import { loadConfig } from '../../src/config/config.ts';
import { buildProviders, speechCatalog } from '../../src/providers/registry.ts';
import { VoicePipeline } from '../../src/voice/pipeline.ts';
import { FlowEngine } from '../../src/voice/engines/flow.engine.ts';
import { EnergyVad } from '../../src/providers/fake/fake.providers.ts';
import type { TurnLatency } from '../../src/voice/latency.ts';
import { WordStt, concat, silence, tone } from '../voice/harness.ts';
import { fakeElevenLabs } from '../helpers/speech-servers.ts';
import { ttsAtRate } from '../../src/voice/call-rate.ts';

function tts(baseUrl: string, extra: Partial<ElevenLabsOptions> = {}): ElevenLabsTts {
  return new ElevenLabsTts({ baseUrl, apiKey: 'el-key', model: 'eleven_flash_v2_5', voices: ELEVENLABS_PREMADE_VOICES, defaultVoiceId: '11labs-Sarah', optimizeStreamingLatency: 3, connectTimeoutMs: 2000, ...extra });
}

async function collect(it: AsyncIterable<Int16Array>): Promise<Int16Array> {
  const parts: Int16Array[] = [];
  for await (const c of it) parts.push(c);
  return concat(...parts);
}

test('elevenlabs: speaks the protocol and hands out the audio chunks as 16 kHz samples', async () => {
  const srv = await fakeElevenLabs({ chunks: 3, chunkSamples: 1601 });
  try {
    const audio = await collect(tts(srv.baseUrl).synthesize('Hello there.', { voiceId: '11labs-George' }));
    assert.equal(audio.length, 3 * 1601);
    for (let k = 0; k < audio.length; k++) assert.equal(audio[k], (k % 2000) - 1000, `sample ${k}`);
    const s = srv.seen[0]!;
    assert.equal(s.path, '/v1/text-to-speech/JBFqnCBsd6RMkjVDRZzb/stream-input', "George's ElevenLabs id");
    assert.equal(s.query.get('model_id'), 'eleven_flash_v2_5');
    assert.equal(s.query.get('output_format'), 'pcm_16000');
    assert.equal(s.query.get('optimize_streaming_latency'), '3');
    assert.equal(s.key, 'el-key');
    assert.deepEqual(s.messages, [
      { text: ' ', voice_settings: { stability: 0.5, similarity_boost: 0.8 } },
      { text: 'Hello there. ', try_trigger_generation: true, flush: true },
      { text: '' },
    ]);
    await collect(tts(srv.baseUrl).synthesize('Hi.', { voiceId: 'flite-kal16' }));
    assert.match(srv.seen[1]!.path, /EXAVITQu4vr4xnSDxMaL/, 'a voice not of ElevenLabs: the default voice (Sarah)');
  } finally {
    await srv.close();
  }
});

test('elevenlabs: barge-in (the reader stops, or its signal aborts) closes the socket at once', async () => {
  const srv = await fakeElevenLabs({ chunks: -1, intervalMs: 20 });
  try {
    let taken = 0;
    for await (const _ of tts(srv.baseUrl).synthesize('A long answer.')) if (++taken === 2) break;
    const stoppedAt = performance.now();
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(srv.seen[0]!.closedAtMs !== undefined && srv.seen[0]!.closedAtMs - stoppedAt < 100, 'the server saw the socket go');
    const abort = new AbortController();
    const it = tts(srv.baseUrl).synthesize('Another long answer.', { signal: abort.signal });
    const reading = collect(it);
    setTimeout(() => abort.abort(new DOMException('barge-in', 'AbortError')), 80);
    await assert.rejects(reading, (e: Error) => e.name === 'AbortError');
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(srv.seen[1]!.closedAtMs !== undefined, 'the aborted stream closed its socket');
  } finally {
    await srv.close();
  }
});

test('elevenlabs: failures map onto tts provider errors (key refused, quota, server error, unreachable, silent)', async () => {
  const refused = await fakeElevenLabs();
  const quota = await fakeElevenLabs({ failWith: 'message-then-1008' });
  const broken = await fakeElevenLabs({ failWith: 'close-1011' });
  const silent = await fakeElevenLabs({ chunks: 1, firstDelayMs: 0, intervalMs: 5000 });
  try {
    const is = (status: number | undefined, retryable: boolean, message: RegExp) => (e: unknown) =>
      e instanceof ProviderError && e.kind === 'tts' && e.provider === 'elevenlabs' && e.status === status && e.retryable === retryable && message.test(e.message);
    await assert.rejects(collect(tts(refused.baseUrl, { apiKey: 'refused' }).synthesize('Hi.')), is(401, false, /handshake refused \(HTTP 401: check the API key\)/));
    await assert.rejects(collect(tts(quota.baseUrl).synthesize('Hi.')), is(undefined, false, /quota_exceeded/));
    await assert.rejects(collect(tts(broken.baseUrl).synthesize('Hi.')), is(undefined, true, /closed by the server \(1011: internal error\)/));
    await assert.rejects(collect(tts('ws://127.0.0.1:9').synthesize('Hi.')), is(undefined, true, /connection failed/));
    await assert.rejects(collect(tts(silent.baseUrl, { idleTimeoutMs: 300 }).synthesize('Hi.')), is(undefined, true, /no audio for 300 ms/));
  } finally {
    await Promise.all([refused.close(), quota.close(), broken.close(), silent.close()]);
  }
});

test('elevenlabs: configured, its voices are offered as 11labs-<Name>, the account\'s own (TTS_VOICES) first', async () => {
  const { media } = loadConfig({ TTS_PROVIDER: 'elevenlabs', TTS_API_KEY: 'k', TTS_VOICES: 'Narrator=abcdefghij0123456789', TTS_VOICE: 'Narrator' });
  const built = buildProviders(media.providers);
  try {
    const { synthesiser } = speechCatalog(built);
    assert.equal(synthesiser.id, 'elevenlabs');
    assert.equal(synthesiser.defaultVoiceId, '11labs-Narrator');
    assert.deepEqual(synthesiser.voices.slice(0, 3).map((v) => v.voice_id), ['11labs-Narrator', '11labs-Sarah', '11labs-Roger']);
    assert.equal(synthesiser.voices.length, 22);
    assert.ok(synthesiser.voices.every((v) => v.provider === 'elevenlabs' && v.sample_rate_hz === 16_000 && v.voice_id.startsWith('11labs-')));
  } finally {
    await built.close();
  }
  assert.throws(() => loadConfig({ TTS_PROVIDER: 'elevenlabs', TTS_VOICES: 'bad entry', TTS_VOICE: 'Nobody', TTS_BASE_URL: 'http://x' }), (e: Error) =>
    /TTS_VOICES entries must be Name=voice-id/.test(e.message) && /TTS_VOICE must be one of the ElevenLabs voices/.test(e.message) && /TTS_BASE_URL must be a ws:\/\/ or wss:\/\/ URL/.test(e.message));
});

test('elevenlabs: a reply\'s latency record carries the time to its first audio', { timeout: 20_000 }, async () => {
  const srv = await fakeElevenLabs({ chunks: 2, firstDelayMs: 250 });
  const flow = {
    start_node_id: 'ask',
    nodes: [
      { id: 'ask', type: 'conversation' as const, instruction: { type: 'static_text' as const, text: 'Sales or support?' }, edges: [{ id: 'e', destination_node_id: 'bye', transition_condition: { type: 'keyword' as const, keywords: ['sales'] } }] },
      { id: 'bye', type: 'end' as const, instruction: { type: 'static_text' as const, text: 'Goodbye.' } },
    ],
  };
  const p = new VoicePipeline({ stt: new WordStt('sales'), tts: tts(srv.baseUrl), vad: new EnergyVad(), engine: new FlowEngine({ flow }) });
  const latencies: TurnLatency[] = [];
  let hangup = false;
  p.on('latency', (l) => latencies.push(l));
  p.on('hangup', () => (hangup = true));
  try {
    await p.start();
    const audio = concat(silence(1500), tone(400), silence(2500));
    const t0 = performance.now();
    for (let i = 0, o = 0; o < audio.length && !hangup; i++, o += 320) {
      p.pushAudio(audio.subarray(o, o + 320));
      await new Promise((r) => setTimeout(r, Math.max(0, t0 + (i + 1) * 20 - performance.now())));
    }
    assert.equal(latencies.length, 1);
    const { ttsMs, e2eMs } = latencies[0]!;
    assert.ok(ttsMs >= 240 && ttsMs < 2000, `tts ${ttsMs} ms: the server's 250 ms to its first audio, and the socket's opening`);
    assert.ok(e2eMs >= ttsMs, `e2e ${e2eMs} ms includes it`);
  } finally {
    await p.close();
    await srv.close();
  }
});

test('elevenlabs: the doctor checks the key with xi-api-key against the voices listing', async () => {
  const srv = await fakeElevenLabs();
  try {
    const line = async (key: string) => {
      const { media } = loadConfig({ TTS_PROVIDER: 'elevenlabs', TTS_API_KEY: key, TTS_BASE_URL: srv.baseUrl });
      return (await doctor(media.providers, 2000)).find((l) => l.engine === 'elevenlabs')!;
    };
    const good = await line('el-key');
    assert.equal(good.available, true, good.detail);
    assert.match(good.detail, /reachable \(GET http:\/\/127\.0\.0\.1:\d+\/v1\/voices: 200\)/);
    const bad = await line('wrong');
    assert.equal(bad.available, false);
    assert.match(bad.detail, /refused the key/);
  } finally {
    await srv.close();
  }
});

test("elevenlabs: the agent's voice_speed is voice_settings.speed (clipped to 0.7-1.2); dictionary words go in phoneme tags", async () => {
  const srv = await fakeElevenLabs({ chunks: 1, chunkSamples: 160 });
  try {
    const pronunciations = [
      { word: 'Zorblax', alphabet: 'ipa', phoneme: 'ˈzɔrblæks' },
      { word: 'tomato', alphabet: 'cmu', phoneme: 'T AH0 M EY1 T OW2' },
    ];
    await collect(tts(srv.baseUrl).synthesize('Zorblax sells a tomato, zorblax!', { speed: 1.5, pronunciations }));
    assert.deepEqual(srv.seen[0]!.messages.slice(0, 2), [
      { text: ' ', voice_settings: { stability: 0.5, similarity_boost: 0.8, speed: 1.2 } },
      {
        text:
          '<phoneme alphabet="cmu-arpabet" ph="Z AO1 R B L AE0 K S">Zorblax</phoneme> sells a ' +
          '<phoneme alphabet="cmu-arpabet" ph="T AH0 M EY1 T OW2">tomato</phoneme>, ' +
          '<phoneme alphabet="cmu-arpabet" ph="Z AO1 R B L AE0 K S">zorblax</phoneme>! ',
        try_trigger_generation: true,
        flush: true,
      },
    ]);
    await collect(tts(srv.baseUrl).synthesize('Slow.', { speed: 0.5 }));
    assert.deepEqual(srv.seen[1]!.messages[0], { text: ' ', voice_settings: { stability: 0.5, similarity_boost: 0.8, speed: 0.7 } });
  } finally {
    await srv.close();
  }
});

test('elevenlabs: on an 8 kHz call the voice is asked for as pcm_8000 and handed on as it came (no resampling)', async () => {
  const srv = await fakeElevenLabs({ chunks: 3, chunkSamples: 800 });
  try {
    const phone = ttsAtRate(tts(srv.baseUrl), 8000);
    const audio = await collect(phone.synthesize('Hello there.', { voiceId: '11labs-George' }));
    assert.equal(srv.seen[0]!.query.get('output_format'), 'pcm_8000');
    assert.equal(audio.length, 3 * 800, 'the samples the server sent, none added or lost by a resampler');
    for (let k = 0; k < audio.length; k++) assert.equal(audio[k], (k % 2000) - 1000, `sample ${k}`);
    const stream = phone.openTextStream?.({ voiceId: '11labs-George' });
    assert.ok(stream);
    stream.write('Hi.');
    stream.end();
    await collect(stream.audio());
    assert.equal(srv.seen[1]!.query.get('output_format'), 'pcm_8000', 'a streamed reply too');
  } finally {
    await srv.close();
  }
});
