import type { ProviderDescriptor } from '../descriptor.ts';
import {
  DEBIAN_MODEL_DIR,
  decoderMode,
  findExecutable,
  PocketsphinxStt,
  pocketsphinxCapabilities,
  probeLibrary,
  type PocketsphinxOptions,
} from './pocketsphinx.stt.ts';

/** Decoders a server loads at start and keeps, unless POCKETSPHINX_WARM_DECODERS says otherwise. */
const SERVER_WARM_DECODERS = 1;

/**
 * STT_PROVIDER=pocketsphinx, the default: embedded recognition, no keys, no network. Reads the
 * bounds of its shared decoder pool (library mode; decoder-pool.ts): POCKETSPHINX_WARM_DECODERS
 * (loaded at start and kept, default 1), POCKETSPHINX_MAX_DECODERS (loaded at most, ~90 MB
 * each, default 1.5 per core, rounded up), POCKETSPHINX_MAX_STREAMS (calls recognised at once, default 16 per
 * core). Doctor checks the model, the library (streaming) and the binary (the fallback).
 */
export const pocketsphinxStt: ProviderDescriptor<'stt', PocketsphinxOptions> = {
  id: 'pocketsphinx',
  role: 'stt',
  fromConfig(reader) {
    // -1: not set (the pool's defaults apply); only the variables set reach the options.
    const set = (name: string, min: number, max: number) => reader.integer(name, -1, min, max);
    const [warm, maxDecoders, maxStreams] = [set('POCKETSPHINX_WARM_DECODERS', 0, 64), set('POCKETSPHINX_MAX_DECODERS', 1, 256), set('POCKETSPHINX_MAX_STREAMS', 1, 10_000)];
    const pool = { ...(warm >= 0 ? { warm } : {}), ...(maxDecoders > 0 ? { maxDecoders } : {}), ...(maxStreams > 0 ? { maxStreams } : {}) };
    return Object.keys(pool).length > 0 ? { pool } : {};
  },
  // A server keeps one decoder loaded by default (POCKETSPHINX_WARM_DECODERS), loaded by warm().
  create: (options) => new PocketsphinxStt({ ...options, pool: { warm: SERVER_WARM_DECODERS, ...options.pool } }),
  capabilities: (options) => pocketsphinxCapabilities(decoderMode(options.mode)),
  async doctor(configured) {
    const options = configured ?? {};
    const bin = findExecutable(options.binary ?? 'pocketsphinx_continuous');
    const modelDir = options.modelDir ?? DEBIAN_MODEL_DIR;
    const ps = new PocketsphinxStt(options);
    const missing = ps.missingModel();
    const library = probeLibrary();
    const streaming = ps.mode() === 'library';
    const band = `; ${ps.capabilities.telephoneBandAdvice}`;
    return [
      {
        engine: 'pocketsphinx',
        role: 'stt',
        selected: configured !== undefined,
        available: !missing && (streaming || Boolean(bin)),
        detail: missing ? `model missing (${missing}): apt-get install pocketsphinx-en-us`
          : streaming ? `in-process streaming decoder (libpocketsphinx through koffi, interim hypotheses), model ${modelDir}${band}`
          : !bin ? 'pocketsphinx_continuous not found: apt-get install pocketsphinx pocketsphinx-en-us'
          : `${bin}, one process per utterance, no interim hypotheses${library.ok ? '' : ` (streaming needs the optional npm package koffi and libpocketsphinx: ${library.why})`}, model ${modelDir}${band}`,
      },
    ];
  },
};
