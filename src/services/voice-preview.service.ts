/**
 * Voice previews (issue 27): a short text spoken by the configured speech engine with an agent's
 * voice settings, as a WAV file, so a voice can be heard before an agent uses it. Per account at
 * most `perMinute` previews a minute (a synthesis costs CPU, or a hosted engine's money).
 */
import { errors } from '../domain/errors.ts';
import { type SpeechCatalog, findVoice, voiceProblem } from '../domain/voice.ts';
import type { RateLimiter } from '../lib/token-bucket.ts';
import { encodeWav } from '../lib/wav.ts';

/** What a preview asks for: the text and the agent's voice settings (the API's field names). */
export interface VoicePreviewRequest {
  text: string;
  voice_id?: string;
  voice_speed?: number;
  volume?: number;
  normalize_for_speech?: boolean;
  pronunciation_dictionary?: Array<{ word: string; alphabet: string; phoneme: string }> | null;
}

/**
 * Speaks `text` in the given style: 16 kHz mono PCM. Composed in the runtime from the configured
 * synthesiser (voice/voice-preview.ts); throws an AppError (errors.speechUnavailable) when it fails.
 */
export type PreviewSynthesiser = (
  text: string,
  style: { voiceId: string; speed?: number; volume?: number; normalise?: boolean; pronunciations?: readonly { word: string; alphabet: string; phoneme: string }[] },
) => Promise<Int16Array>;

/** Previews a minute per account, by default. */
export const DEFAULT_PREVIEWS_PER_MINUTE = 20;

export class VoicePreviewService {
  readonly #speech: SpeechCatalog;
  readonly #synthesise: PreviewSynthesiser;
  readonly #limiter: RateLimiter;
  readonly #perMinute: number;

  constructor(deps: { speech: SpeechCatalog; synthesise: PreviewSynthesiser; limiter: RateLimiter; perMinute?: number }) {
    this.#speech = deps.speech;
    this.#synthesise = deps.synthesise;
    this.#limiter = deps.limiter;
    this.#perMinute = deps.perMinute ?? DEFAULT_PREVIEWS_PER_MINUTE;
  }

  /** The preview as a WAV file (16 kHz mono 16-bit). */
  async preview(accountId: string, request: VoicePreviewRequest): Promise<Buffer> {
    const asked = request.voice_id ?? this.#speech.synthesiser.defaultVoiceId;
    const voice = findVoice(this.#speech, asked); // a Retell id ('openai-Alloy') is the engine's own voice
    const problem = voice ? null : voiceProblem(this.#speech, asked);
    if (!voice || problem) throw errors.invalidRequest(problem?.message ?? `voice_id "${asked}" is not a voice of this server`, problem?.details);
    const voiceId = voice.voice_id;
    if (request.text.trim() === '') throw errors.invalidRequest('text must say something (not only spaces)');
    const taken = await this.#limiter.take(`voice-preview:${accountId}`, this.#perMinute);
    if (!taken.ok) throw errors.rateLimited(taken.retryAfterMs);
    const samples = await this.#synthesise(request.text, {
      voiceId,
      ...(request.voice_speed !== undefined ? { speed: request.voice_speed } : {}),
      ...(request.volume !== undefined ? { volume: request.volume } : {}),
      ...(request.normalize_for_speech ? { normalise: true } : {}),
      ...(request.pronunciation_dictionary?.length ? { pronunciations: request.pronunciation_dictionary } : {}),
    });
    return encodeWav({ sampleRate: 16_000, channels: 1, samples });
  }
}
