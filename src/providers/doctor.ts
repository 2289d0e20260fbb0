import { loadResampler } from './audio/resample.ts';
import { CATALOG, descriptorFor } from './catalog.ts';
import type { EngineStatus, ProviderRole } from './descriptor.ts';
import { preemptiveRepliesAvailable } from './features.ts';
import type { OpenAiEmbeddingsOptions } from './openai/embeddings.ts';
import type { ProviderChoice, ProviderOptions } from './registry.ts';
import type { SttCapabilities } from './stt.ts';

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
 * the resampler every call uses. Local engines are checked (binaries, model files, WASM modules).
 * A selected remote provider (descriptor.remote) is said to lack its key when it has none, and,
 * unless `probeTimeoutMs` is 0, its endpoint is asked once within that bound: a refused key or an
 * endpoint that cannot be reached makes it unavailable. The knowledge bases' embeddings endpoint,
 * when one is configured, is checked the same way (its own line, role `embeddings`).
 */
export async function doctor(options: ProviderOptions, probeTimeoutMs = 0, embeddings: OpenAiEmbeddingsOptions | null = null): Promise<EngineStatus[]> {
  const lines = async (role: ProviderRole, choice: ProviderChoice | undefined) => checkRemote(role, choice, await roleLines(role, choice), probeTimeoutMs);
  // The probes of the roles run at once: start-up waits for the slowest one, not their sum.
  const [stt, tts, vad, llm, embedder] = await Promise.all([lines('stt', options.stt), lines('tts', options.tts), lines('vad', options.vad), lines('llm', options.llm), embeddingsLine(embeddings, probeTimeoutMs)]);
  const out = [...stt, ...tts, ...(await Promise.all((options.ttsExtra ?? []).map((c) => extraLines(c, probeTimeoutMs)))).flat(), ...vad];
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
  out.push(...(llm.length > 0 ? llm : [NO_LLM]), embedder);
  return out;
}

/** The knowledge bases' embeddings endpoint: not configured (lexical retrieval only), or its key and its `GET /models` answer. */
async function embeddingsLine(options: OpenAiEmbeddingsOptions | null, probeTimeoutMs: number): Promise<EngineStatus> {
  const line = { engine: 'openai-embeddings', role: 'embeddings' as const };
  if (!options) return { ...line, selected: false, available: false, detail: 'not configured (EMBEDDINGS_BASE_URL): knowledge bases use lexical retrieval only' };
  const notes = [`model ${options.model} at ${options.baseUrl}`];
  if (!options.apiKey) notes.push('no EMBEDDINGS_API_KEY set: the endpoint must accept requests without a key');
  if (probeTimeoutMs <= 0) return { ...line, selected: true, available: true, detail: [...notes, 'not contacted (PROVIDER_PROBE_TIMEOUT_MS=0)'].join('; ') };
  const answer = await probe(`${options.baseUrl.replace(/\/+$/, '')}/models`, options.apiKey, probeTimeoutMs);
  return { ...line, selected: true, available: answer.ok, detail: [...notes, answer.detail].join('; ') };
}

/** The selected provider's lines with what its key and its endpoint's answer say (doctor). */
async function checkRemote(role: ProviderRole, choice: ProviderChoice | undefined, lines: EngineStatus[], probeTimeoutMs: number): Promise<EngineStatus[]> {
  if (!choice) return lines;
  const remote = descriptorFor(role, choice.id).remote?.(choice.options);
  if (!remote) return lines;
  const notes: string[] = [];
  let available = true;
  if (!remote.apiKey) notes.push(`no ${remote.keyVariable} set: the endpoint must accept requests without a key`);
  if (remote.probeUrl && probeTimeoutMs > 0) {
    const answer = await probe(remote.probeUrl, remote.apiKey, probeTimeoutMs, remote.probeHeaders);
    available = answer.ok;
    notes.push(answer.detail);
  } else if (remote.probeUrl) notes.push('not contacted (PROVIDER_PROBE_TIMEOUT_MS=0)');
  return lines.map((line) => (line.selected ? { ...line, available: line.available && available, detail: [line.detail.replace(/ \(not contacted\)$/, ''), ...notes].join('; ') } : line));
}

/**
 * One GET of `url` with the key (as a bearer token, or in `headers`), within `timeoutMs`; the body is not read. Any answer but a
 * refused key (401, 403) shows the endpoint is there (a 404: it has no such listing).
 */
export async function probe(url: string, apiKey: string | undefined, timeoutMs: number, headers?: Record<string, string>): Promise<{ ok: boolean; detail: string }> {
  try {
    const response = await fetch(url, {
      headers: headers ?? (apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body?.cancel();
    if (response.status === 401 || response.status === 403) return { ok: false, detail: `the endpoint refused the key (GET ${url}: ${response.status})` };
    return { ok: true, detail: `reachable (GET ${url}: ${response.status})` };
  } catch (error) {
    const failure = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
    const why = failure.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (failure.cause?.code ?? failure.cause?.message ?? failure.message ?? 'error');
    return { ok: false, detail: `cannot be reached (GET ${url}: ${why})` };
  }
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

/** A speech provider configured beside TTS_PROVIDER (TTS_EXTRA_PROVIDERS): its own lines, checked as the selected one's are. */
async function extraLines(choice: ProviderChoice, probeTimeoutMs: number): Promise<EngineStatus[]> {
  const descriptor = descriptorFor('tts', choice.id);
  const capabilities = descriptor.capabilities(choice.options);
  const lines = (await descriptor.doctor(choice.options)).map((line) => ({ ...line, capabilities, detail: `beside TTS_PROVIDER (TTS_EXTRA_PROVIDERS): ${line.detail}` }));
  return checkRemote('tts', choice, lines, probeTimeoutMs);
}

/** The features that need a capability, and whether the configured providers have it. */
export function featureReport(options: ProviderOptions): FeatureStatus[] {
  const stt = descriptorFor('stt', options.stt.id);
  const preemptive = preemptiveRepliesAvailable({ id: stt.id, capabilities: stt.capabilities(options.stt.options) }, `STT_PROVIDER=${stt.id}`);
  return [{ feature: 'preemptive_replies', available: preemptive.ok, detail: preemptive.why }, telephoneBand(stt.id, stt.capabilities(options.stt.options))];
}

/**
 * Phone calls (issue 24): whether the configured recogniser hears telephone-band audio well
 * (`available`), whether it decodes 8 kHz natively, and what the call path gives it: a G.711 or
 * Twilio call runs at 8 kHz end to end, and its audio reaches a recogniser that decodes 8 kHz as
 * it came; one that takes 16 kHz only gets its own upsampled copy (src/voice/call-rate.ts).
 */
function telephoneBand(id: string, capabilities: SttCapabilities): FeatureStatus {
  const rates = capabilities.inputSampleRates;
  const native = rates === 'any' || rates.includes(8_000);
  return {
    feature: 'telephone_band',
    available: capabilities.telephoneBand === 'good',
    detail: `STT_PROVIDER=${id} ${native ? 'decodes 8 kHz natively' : 'takes 16 kHz only'}; phone calls (G.711 SIP, Twilio) ${native && capabilities.telephoneRate !== 16_000 ? 'reach it at 8 kHz as they came' : 'reach it upsampled from 8 kHz to 16 kHz (its input alone; the call runs at 8 kHz)'}; ${capabilities.telephoneBandAdvice}`,
  };
}
