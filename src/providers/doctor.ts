import { loadResampler } from './audio/resample.ts';
import { CATALOG, descriptorFor } from './catalog.ts';
import type { EngineStatus, ProviderRole } from './descriptor.ts';
import { preemptiveRepliesAvailable } from './features.ts';
import type { ProviderChoice, ProviderOptions } from './registry.ts';

/** One feature of the voice pipeline that needs a capability of the configured providers. */
export interface FeatureStatus {
  /** The agent setting it serves, e.g. 'preemptive_replies'. */
  feature: string;
  /** Whether it can run with the configured providers (agents may still turn it off). */
  available: boolean;
  /** Why, or why not, naming the provider as configured (e.g. STT_PROVIDER=openai). */
  detail: string;
}

/** Without an LLM the engines that need one are refused; said on the `llm` line. */
const NO_LLM: EngineStatus = {
  engine: 'llm',
  role: 'llm',
  selected: false,
  available: false,
  detail: 'no LLM configured: conversation flows with prompt nodes or prompt transitions, and service-LLM agents, are refused',
};

/**
 * Reports each speech engine's availability, for the CLI and start-up logs: each provider of the
 * catalog gives its own lines (descriptor.doctor), the selected one's with its capabilities, then
 * the resampler every call uses. Checks local engines only (binaries, model files, WASM modules);
 * remote endpoints are reported as configured, not contacted.
 */
export async function doctor(options: ProviderOptions): Promise<EngineStatus[]> {
  const out = [...(await roleLines('stt', options.stt)), ...(await roleLines('tts', options.tts)), ...(await roleLines('vad', options.vad))];
  let resampler = true;
  try {
    await loadResampler();
  } catch {
    resampler = false;
  }
  out.push({
    engine: 'speex-resampler', role: 'resampler', selected: true, available: resampler,
    detail: resampler ? 'Speex resampler (WASM) loaded' : 'npm package @echogarden/speex-resampler-wasm missing: npm ci',
  });
  const llm = await roleLines('llm', options.llm);
  out.push(...(llm.length > 0 ? llm : [NO_LLM]));
  return out;
}

/** The lines of every provider of `role`, in catalog order; the chosen one's carry its capabilities. */
async function roleLines(role: ProviderRole, choice: ProviderChoice | undefined): Promise<EngineStatus[]> {
  const out: EngineStatus[] = [];
  for (const descriptor of CATALOG[role]) {
    if (descriptor.id !== choice?.id) {
      out.push(...(await descriptor.doctor(undefined)));
      continue;
    }
    const capabilities = descriptor.capabilities(choice.options);
    out.push(...(await descriptor.doctor(choice.options)).map((line) => ({ ...line, capabilities })));
  }
  return out;
}

/** The features that need a capability, and whether the configured providers have it. */
export function featureReport(options: ProviderOptions): FeatureStatus[] {
  const stt = descriptorFor('stt', options.stt.id);
  const preemptive = preemptiveRepliesAvailable({ id: stt.id, capabilities: stt.capabilities(options.stt.options) }, `STT_PROVIDER=${stt.id}`);
  return [{ feature: 'preemptive_replies', available: preemptive.ok, detail: preemptive.why }];
}
