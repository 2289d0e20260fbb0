// Providers from one descriptor table (src/providers/catalog.ts): every value the configuration
// documents has a descriptor, ids are unique per role, each descriptor reads its own variables and
// states what its provider can do, the provider built states the same at run time, and nothing
// outside src/providers/ branches on a provider's name.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import { CATALOG, DEFAULT_PROVIDERS, descriptorFor } from '../../src/providers/catalog.ts';
import type { ProviderRole } from '../../src/providers/descriptor.ts';
import { decoderMode, pocketsphinxCapabilities } from '../../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import { buildProviders } from '../../src/providers/registry.ts';
import type { SttCapabilities } from '../../src/providers/stt.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const ROLES = Object.keys(CATALOG) as ProviderRole[];

/** The rows of the variable table in src/config/media.config.ts: name -> [default, meaning]. */
function documentedVariables(): Map<string, [string, string]> {
  const text = fs.readFileSync(path.join(ROOT, 'src/config/media.config.ts'), 'utf8');
  const rows = new Map<string, [string, string]>();
  for (const match of text.matchAll(/^ \* \| ([A-Z_]+) \| ([^|]+) \| ([^|]+) \|$/gm)) rows.set(match[1]!, [match[2]!.trim(), match[3]!.trim()]);
  return rows;
}

/** The choices a *_PROVIDER row documents: "pocketsphinx, openai (transcription endpoint), ..." -> ids. */
function documentedChoices(meaning: string): string[] {
  return meaning.split(/,| or /).map((choice) => choice.replace(/\(.*?\)/g, '').trim()).filter(Boolean);
}

const PICKED_BY: Record<Exclude<ProviderRole, 'llm'>, string> = { stt: 'STT_PROVIDER', tts: 'TTS_PROVIDER', vad: 'VAD_PROVIDER' };

describe('the provider catalog', () => {
  it('lists each descriptor under its own role, with an id unique within the role', () => {
    for (const role of ROLES) {
      const ids = CATALOG[role].map((d) => d.id);
      assert.deepEqual(ids, [...new Set(ids)], `${role}: ids are unique`);
      for (const d of CATALOG[role]) assert.equal(d.role, role, `${d.id} is listed under ${role}`);
    }
  });

  for (const [role, variable] of Object.entries(PICKED_BY) as Array<[Exclude<ProviderRole, 'llm'>, string]>) {
    it(`has a descriptor for every ${variable} value documented, and no other; the documented default is the catalog's`, () => {
      const row = documentedVariables().get(variable);
      assert.ok(row, `${variable} is in the table of src/config/media.config.ts`);
      assert.deepEqual(CATALOG[role].map((d) => d.id), documentedChoices(row[1]), 'in the order the configuration error lists them');
      assert.equal(row[0], DEFAULT_PROVIDERS[role]);
      assert.equal(descriptorFor(role, DEFAULT_PROVIDERS[role]).id, DEFAULT_PROVIDERS[role]);
    });
  }

  it('picks the LLM by LLM_BASE_URL, the only variable that enables one; the fake LLM only from code', () => {
    assert.deepEqual(CATALOG.llm.map((d) => [d.id, d.enabledBy]), [['openai', 'LLM_BASE_URL'], ['fake', undefined]]);
    assert.ok(documentedVariables().has('LLM_BASE_URL'));
    assert.equal(loadConfig({}).media.providers.llm, undefined);
    assert.deepEqual(loadConfig({ LLM_BASE_URL: 'http://127.0.0.1:9/v1/', LLM_API_KEY: 'k' }).media.providers.llm, {
      id: 'openai',
      options: { baseUrl: 'http://127.0.0.1:9/v1', model: 'gpt-4o-mini', timeoutMs: 10_000, apiKey: 'k' },
    });
  });

  it('names an unknown id instead of building something else', () => {
    assert.throws(() => descriptorFor('stt', 'whisper-local'), /no stt provider "whisper-local" in the catalog/);
  });
});

describe('each descriptor reads its own variables, as documented', () => {
  const media = (env: Record<string, string>) => loadConfig(env).media.providers;

  it('the embedded engines by default, reading nothing', () => {
    assert.deepEqual(media({}), { stt: { id: 'pocketsphinx', options: {} }, tts: { id: 'flite', options: {} }, vad: { id: 'fvad', options: {} } });
    assert.deepEqual(media({ STT_MODEL: 'x', STT_BASE_URL: 'not read', TTS_MODEL: 'y' }).stt, { id: 'pocketsphinx', options: {} });
  });

  it("PocketSphinx: its decoder pool's bounds, only those set", () => {
    assert.deepEqual(media({ POCKETSPHINX_MAX_STREAMS: '40' }).stt, { id: 'pocketsphinx', options: { pool: { maxStreams: 40 } } });
    assert.deepEqual(media({ POCKETSPHINX_WARM_DECODERS: '0', POCKETSPHINX_MAX_DECODERS: '4' }).stt, { id: 'pocketsphinx', options: { pool: { warm: 0, maxDecoders: 4 } } });
  });

  it('OpenAI-compatible transcription and speech: base URL required, model and voice defaulted, keys only when set', () => {
    const providers = media({ STT_PROVIDER: 'openai', STT_BASE_URL: 'http://stt.test/v1', TTS_PROVIDER: 'openai', TTS_BASE_URL: 'http://tts.test/v1', TTS_API_KEY: 't' });
    assert.deepEqual(providers.stt, { id: 'openai', options: { baseUrl: 'http://stt.test/v1', model: 'whisper-1' } });
    assert.deepEqual(providers.tts, { id: 'openai', options: { baseUrl: 'http://tts.test/v1', model: 'tts-1', defaultVoice: 'alloy', apiKey: 't' } });
  });

  it("Deepgram: Deepgram's own endpoint by default, a model only when set", () => {
    assert.deepEqual(media({ STT_PROVIDER: 'deepgram' }).stt, { id: 'deepgram', options: { url: 'wss://api.deepgram.com/v1/listen' } });
    assert.deepEqual(media({ STT_PROVIDER: 'deepgram', STT_BASE_URL: 'ws://127.0.0.1:9/v1/listen', STT_MODEL: 'nova-2', STT_API_KEY: 'd' }).stt, {
      id: 'deepgram',
      options: { url: 'ws://127.0.0.1:9/v1/listen', model: 'nova-2', apiKey: 'd' },
    });
  });

  it('every bad variable is reported at once, by name, in the order read', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (error) {
        assert.ok(error instanceof ConfigError);
        return error.problems;
      }
      return assert.fail('the configuration was accepted');
    };
    assert.deepEqual(problems({ STT_PROVIDER: 'nope', TTS_PROVIDER: 'x', VAD_PROVIDER: 'y' }), [
      'STT_PROVIDER must be one of pocketsphinx, openai, deepgram, assemblyai, fake (got "nope")',
      'TTS_PROVIDER must be one of flite, openai, elevenlabs, cartesia, fake (got "x")',
      'VAD_PROVIDER must be one of fvad, energy (got "y")',
    ]);
    assert.deepEqual(problems({ LLM_BASE_URL: 'ftp://llm', STT_PROVIDER: 'openai', TTS_PROVIDER: 'openai', STT_TIMEOUT_MS: '1' }), [
      'LLM_BASE_URL must be an absolute http(s) URL (got "ftp://llm")',
      'STT_BASE_URL is required with STT_PROVIDER=openai',
      'TTS_BASE_URL is required with TTS_PROVIDER=openai',
      'STT_TIMEOUT_MS must be an integer from 500 to 120000 (got "1")',
    ]);
    assert.deepEqual(problems({ STT_PROVIDER: 'deepgram', STT_BASE_URL: 'http://x' }), ['STT_BASE_URL must be a ws:// or wss:// URL with STT_PROVIDER=deepgram (got "http://x")']);
  });
});

/** What each recogniser states, from its descriptor with the options configuration gives it. */
const RECOGNISERS: Record<string, { env: Record<string, string>; expect: Partial<SttCapabilities> }> = {
  openai: {
    env: { STT_PROVIDER: 'openai', STT_BASE_URL: 'http://127.0.0.1:9/v1' },
    expect: { streaming: false, interimResults: false, biasing: 'runtime', inputSampleRates: 'any', telephoneBand: 'good' },
  },
  deepgram: { env: { STT_PROVIDER: 'deepgram' }, expect: { streaming: true, interimResults: true, biasing: 'open-only', languages: ['*'], inputSampleRates: 'any', telephoneBand: 'good' } },
  assemblyai: { env: { STT_PROVIDER: 'assemblyai' }, expect: { streaming: true, interimResults: true, biasing: 'open-only', languages: ['en'], inputSampleRates: 'any', telephoneBand: 'good' } },
  fake: { env: { STT_PROVIDER: 'fake' }, expect: { streaming: false, interimResults: false, biasing: 'none', languages: ['en-US'], telephoneBand: 'good' } },
};

describe('capabilities', () => {
  it('PocketSphinx: streaming either way; interim results and bias() with its library only; poor on the telephone band', () => {
    assert.deepEqual(pocketsphinxCapabilities('library'), {
      streaming: true,
      interimResults: true,
      biasing: 'runtime',
      languages: ['en-US'],
      inputSampleRates: [8_000, 16_000],
      telephoneRate: 16_000,
      telephoneBand: 'poor',
      telephoneBandAdvice: 'wideband model: telephone-band callers (phone lines, hands-free Bluetooth) are heard badly, use STT_PROVIDER=deepgram or openai for them',
    });
    assert.deepEqual(pocketsphinxCapabilities('process'), { ...pocketsphinxCapabilities('library'), interimResults: false, biasing: 'none' });
    const descriptor = descriptorFor('stt', 'pocketsphinx');
    assert.deepEqual(descriptor.capabilities({ mode: 'process' }), pocketsphinxCapabilities('process'));
    assert.deepEqual(descriptor.capabilities({}), pocketsphinxCapabilities(decoderMode('auto')), 'auto: whichever way the decoder runs here');
  });

  for (const [id, { env, expect }] of Object.entries(RECOGNISERS)) {
    it(`STT_PROVIDER=${id}: ${JSON.stringify(expect)}`, () => {
      const { stt } = loadConfig(env).media.providers;
      const stated = descriptorFor('stt', stt.id).capabilities(stt.options);
      assert.deepEqual({ ...stated, ...expect }, stated);
      assert.ok(stated.telephoneBandAdvice.length > 0);
    });
  }

  it('speech engines: Flite synthesizes a sentence whole, the OpenAI-compatible endpoint streams; the voices are those offered', () => {
    const flite = descriptorFor('tts', 'flite').capabilities({});
    assert.deepEqual(flite, { streaming: false, languages: ['en-US'], voices: ['flite-kal16', 'flite-slt', 'flite-rms', 'flite-awb', 'flite-kal'], outputSampleRates: [8_000] });
    const openai = descriptorFor('tts', 'openai').capabilities({ baseUrl: 'http://127.0.0.1:9/v1', model: 'tts-1', defaultVoice: 'my-voice' });
    assert.equal(openai.streaming, true);
    assert.deepEqual(openai.voices.slice(0, 2), ['my-voice', 'alloy'], 'a configured voice that is not one of OpenAI\'s comes first');
    assert.equal(descriptorFor('tts', 'fake').capabilities({}).streaming, true);
  });

  it('LLMs stream and call tools; fvad is tunable, the energy threshold is not', () => {
    for (const d of CATALOG.llm) assert.deepEqual(d.capabilities({}), { streaming: true, tools: true }, d.id);
    assert.deepEqual(descriptorFor('vad', 'fvad').capabilities({}), { inputSampleRates: [8_000, 16_000], tunable: true });
    assert.deepEqual(descriptorFor('vad', 'energy').capabilities({}), { inputSampleRates: [8_000, 16_000], tunable: false });
  });

  /** The providers whose endpoint is a WebSocket: a ws:// base URL instead of the http:// one. */
  const WEBSOCKET_ENDPOINTS: Record<string, Record<string, string>> = {
    deepgram: { STT_BASE_URL: 'ws://127.0.0.1:9' },
    assemblyai: { STT_BASE_URL: 'ws://127.0.0.1:9' },
    elevenlabs: { TTS_BASE_URL: 'ws://127.0.0.1:9' },
    cartesia: { TTS_BASE_URL: 'ws://127.0.0.1:9' },
  };

  it('each recogniser and speech engine built states at run time what its descriptor states', async () => {
    const env = { STT_BASE_URL: 'http://127.0.0.1:9/v1', TTS_BASE_URL: 'http://127.0.0.1:9/v1' };
    for (const stt of CATALOG.stt) {
      for (const tts of CATALOG.tts) {
        const { providers } = loadConfig({ ...env, STT_PROVIDER: stt.id, ...WEBSOCKET_ENDPOINTS[stt.id], TTS_PROVIDER: tts.id, ...WEBSOCKET_ENDPOINTS[tts.id] }).media;
        const built = buildProviders(providers);
        try {
          assert.deepEqual(built.stt.capabilities, stt.capabilities(providers.stt.options), stt.id);
          assert.deepEqual(built.stt.capabilities?.languages, built.stt.languages(), `${stt.id}: languages() agrees`);
          assert.deepEqual(built.tts.capabilities, tts.capabilities(providers.tts.options), tts.id);
          assert.deepEqual(built.tts.capabilities?.voices, built.tts.voices().map((v) => v.voice_id), `${tts.id}: voices() agrees`);
        } finally {
          await built.close();
        }
      }
    }
  });
});

describe('nothing outside src/providers/ branches on a provider name', () => {
  it('no comparison with, or case of, a catalog id in the rest of src/', () => {
    const ids = [...new Set(ROLES.flatMap((role) => CATALOG[role].map((d) => d.id)))].join('|');
    const branch = new RegExp(`(?:[!=]==?\\s*'(?:${ids})'|'(?:${ids})'\\s*[!=]==?|case\\s+'(?:${ids})'\\s*:)`);
    const found: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) {
          if (path.relative(ROOT, file) !== path.join('src', 'providers')) walk(file);
        } else if (file.endsWith('.ts')) {
          fs.readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
            if (branch.test(line)) found.push(`${path.relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
          });
        }
      }
    };
    walk(path.join(ROOT, 'src'));
    assert.deepEqual(found, []);
  });
});
