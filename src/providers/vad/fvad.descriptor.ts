import type { NoOptions, ProviderDescriptor } from '../descriptor.ts';
import type { VadCapabilities } from '../vad.ts';
import { FvadProvider, fvadAvailable } from './fvad.ts';

/** libfvad judges 16 kHz frames and honours VadOptions. */
const CAPABILITIES: VadCapabilities = { inputSampleRates: [8_000, 16_000], tunable: true };

/** VAD_PROVIDER=fvad, the default: WebRTC VAD as WASM. Reads no variables. */
export const fvadVad: ProviderDescriptor<'vad', NoOptions> = {
  id: 'fvad',
  role: 'vad',
  fromConfig: () => ({}),
  create: () => new FvadProvider(),
  capabilities: () => CAPABILITIES,
  async doctor(options) {
    const ok = await fvadAvailable();
    return [
      { engine: 'fvad', role: 'vad', selected: options !== undefined, available: ok, detail: ok ? 'WebRTC VAD (WASM) loaded' : 'npm package @echogarden/fvad-wasm missing: npm ci' },
    ];
  },
};
