/**
 * The speech engines agent tests in audio mode run on (issue 28): the embedded recogniser and
 * synthesiser unless a case names others (`providers`), and a named one only where this server
 * can run it: the embedded engine of its role, or the provider the server is configured with.
 */
import type { CaseProviders } from '../../domain/agent-test.ts';
import { CATALOG, descriptorFor } from '../../providers/catalog.ts';
import type { ProviderChoice, Providers } from '../../providers/registry.ts';
import type { SttProvider } from '../../providers/stt.ts';
import type { TtsProvider } from '../../providers/tts.ts';

type SpeechRole = 'stt' | 'tts';
const ROLE_NAMES: Record<SpeechRole, string> = { stt: 'speech recogniser', tts: 'speech synthesiser' };

export class TestSpeech {
  readonly #server: Providers;
  /** The names (STT_PROVIDER, TTS_PROVIDER) of the server's providers. */
  readonly #configured: Readonly<Record<SpeechRole, string>>;
  readonly #embedded: { readonly stt: ProviderChoice; readonly tts: ProviderChoice };
  /** The embedded engines, built on first use where the server runs other ones. */
  #stt: SttProvider | undefined;
  #tts: TtsProvider | undefined;

  /**
   * `server`: the server's providers, `configured` their names (a provider may call itself more
   * precisely: 'openai-transcription'); `embedded`: the embedded engines' choices (config.media.embedded).
   */
  constructor(server: Providers, configured: Readonly<Record<SpeechRole, string>>, embedded: { readonly stt: ProviderChoice; readonly tts: ProviderChoice }) {
    this.#server = server;
    this.#configured = configured;
    this.#embedded = embedded;
  }

  /** What is wrong with `names` on this server ("providers.stt: ..."), or undefined when a case can run on them. */
  problem(names: CaseProviders): string | undefined {
    for (const role of ['stt', 'tts'] as const) {
      const id = names[role];
      if (id === undefined) continue;
      const known = CATALOG[role].map((d) => d.id);
      if (!known.includes(id)) return `providers.${role}: there is no ${ROLE_NAMES[role]} named "${id}" (one of: ${known.join(', ')})`;
      const runnable = [...new Set([this.#embedded[role].id, this.#configured[role]])];
      if (!runnable.includes(id)) return `providers.${role}: ${id} is not configured on this server (a case may name ${runnable.join(' or ')})`;
    }
    return undefined;
  }

  /** The providers of a case naming `names` (checked by `problem`; throws its message otherwise). */
  forCase(names: CaseProviders): Providers {
    const problem = this.problem(names);
    if (problem) throw new Error(problem);
    return { ...this.#server, stt: this.#pick('stt', names.stt), tts: this.#pick('tts', names.tts) };
  }

  /** Closes the embedded engines this built (the server's own are closed with the server's). */
  async close(): Promise<void> {
    await Promise.allSettled([this.#stt?.close?.(), this.#tts?.close?.()]);
  }

  #pick<R extends SpeechRole>(role: R, id: string | undefined): Providers[R] {
    const wanted = id ?? this.#embedded[role].id;
    if (this.#configured[role] === wanted) return this.#server[role];
    if (role === 'stt') return (this.#stt ??= descriptorFor('stt', this.#embedded.stt.id).create(this.#embedded.stt.options)) as Providers[R];
    return (this.#tts ??= descriptorFor('tts', this.#embedded.tts.id).create(this.#embedded.tts.options)) as Providers[R];
  }
}
