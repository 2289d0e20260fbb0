/**
 * A voice sample: one short text spoken by the configured synthesiser as an agent with these
 * settings would speak it (the same normalising, speed, pronunciations and volume as a call's
 * TTS stage, stages/tts.stage.ts), collected into one PCM buffer. Bounded in length and in time.
 */
import type { Pronunciation, TtsProvider } from '../providers/tts.ts';
import { ProviderError, isAbortError } from '../providers/errors.ts';
import { normaliseForSpeech } from './speech-normaliser.ts';
import { applyVolume } from './volume.ts';

/** The synthesiser's output rate (providers/tts.ts: always 16 kHz mono). */
export const PREVIEW_SAMPLE_RATE = 16_000;

export interface PreviewStyle {
  voiceId: string;
  /** The agent's `voice_speed` (1: the voice's own rate). */
  speed?: number;
  /** The agent's `volume` (gain, 1: unchanged). */
  volume?: number;
  pronunciations?: readonly Pronunciation[];
  /** The agent's `normalize_for_speech`. */
  normalise?: boolean;
}

export interface PreviewLimits {
  /** Longest sample kept, ms of audio; synthesis stops there. */
  maxAudioMs: number;
  /** Longest the synthesiser may take, ms; then the preview fails as the synthesiser's. */
  timeoutMs: number;
}

/** A preview's bounds: 30 s of audio at most (300 characters take about 20 s), 15 s to make it. */
export const PREVIEW_LIMITS: PreviewLimits = { maxAudioMs: 30_000, timeoutMs: 15_000 };

/**
 * `text` spoken in `style`: 16 kHz mono PCM, at most `limits.maxAudioMs` long. Rejects with the
 * synthesiser's ProviderError (kind 'tts') when it fails or takes longer than `limits.timeoutMs`.
 */
export async function synthesisePreview(tts: TtsProvider, text: string, style: PreviewStyle, limits: PreviewLimits): Promise<Int16Array> {
  const maxSamples = Math.floor((limits.maxAudioMs / 1000) * PREVIEW_SAMPLE_RATE);
  const signal = AbortSignal.timeout(limits.timeoutMs);
  const chunks: Int16Array[] = [];
  let samples = 0;
  try {
    for await (const pcm of tts.synthesize(style.normalise ? normaliseForSpeech(text) : text, {
      voiceId: style.voiceId,
      ...(style.speed !== undefined && style.speed !== 1 ? { speed: style.speed } : {}),
      ...(style.pronunciations?.length ? { pronunciations: style.pronunciations } : {}),
      signal,
    })) {
      const room = maxSamples - samples;
      const kept = pcm.length > room ? pcm.subarray(0, room) : pcm;
      chunks.push(style.volume === undefined ? kept : applyVolume(kept, style.volume));
      samples += kept.length;
      if (samples >= maxSamples) break; // the iterator's return() releases the synthesiser
    }
  } catch (e) {
    if (e instanceof ProviderError) throw e;
    const why = signal.aborted || isAbortError(e) ? `took longer than ${limits.timeoutMs} ms` : 'synthesis failed';
    throw new ProviderError('tts', tts.id, why, { cause: e });
  }
  const out = new Int16Array(samples);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
