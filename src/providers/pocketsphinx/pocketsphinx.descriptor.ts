import { availableParallelism } from 'node:os';
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

/**
 * STT_PROVIDER=pocketsphinx, the default: embedded recognition, no keys, no network. Reads the
 * bounds of its shared decoder pool (library mode; decoder-pool.ts): POCKETSPHINX_WARM_DECODERS
 * (loaded at start and kept, default 1), POCKETSPHINX_MAX_DECODERS (loaded at most, ~100 MB
 * each, default 3 per core), POCKETSPHINX_MAX_STREAMS (calls recognised at once, default 16 per
 * core). Doctor checks the model, the library (streaming) and the binary (the fallback).
 */
export const pocketsphinxStt: ProviderDescriptor<'stt', PocketsphinxOptions> = {
  id: 'pocketsphinx',
  role: 'stt',
  fromConfig(reader) {
    const cores = availableParallelism();
    const warm = reader.integer('POCKETSPHINX_WARM_DECODERS', 1, 0, 64);
    const maxDecoders = reader.integer('POCKETSPHINX_MAX_DECODERS', Math.max(warm, 3 * cores), 1, 256);
    const maxStreams = reader.integer('POCKETSPHINX_MAX_STREAMS', 16 * cores, 1, 10_000);
    return { pool: { warm, maxDecoders: Math.max(warm, maxDecoders), maxStreams } };
  },
  create: (options) => new PocketsphinxStt(options),
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
