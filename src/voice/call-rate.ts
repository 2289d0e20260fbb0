/**
 * A call's providers at the call's rate: its recogniser and its voice.
 *
 * The recogniser. On a telephone-band call (8 kHz) a recogniser that decodes 8 kHz natively
 * (SttCapabilities.inputSampleRates: the hosted recognisers, which are told the rate) is opened at
 * 8 kHz and handed the caller's audio as it came. One that takes 16 kHz only, or hears phone
 * calls better through its wideband decoder (SttCapabilities.telephoneRate 16000: PocketSphinx,
 * measured), is fed a resampled copy here, its own input and nothing else's: the VAD, the
 * recording and the voicemail detector still hear the 8 kHz audio. It is told the copy came at
 * 8 kHz (SttOpenOptions.sourceSampleRateHz), so it can start from what that band sounds like.
 *
 * The voice. A synthesiser that makes the call's rate itself (TtsCapabilities.outputSampleRates:
 * ElevenLabs' `pcm_8000`, Cartesia's `sample_rate` 8000) is asked for it; any other one's 16 kHz
 * audio is resampled once, here, on its way out to the call. The call's frames, its recording and
 * its wire then carry the call's own rate, and nothing between the synthesiser and the caller
 * converts it again.
 */
import type { SttOpenOptions, SttProvider, SttStream } from '../providers/stt.ts';
import type { TtsOptions, TtsProvider, TtsTextStream } from '../providers/tts.ts';
import { createResampler } from '../providers/audio/resample.ts';
import { SAMPLE_RATE_HZ, type CallSampleRate } from './frames.ts';

/** Whether `stt` is given audio at `rateHz` as it is (its stated capabilities; none stated: 16 kHz only). */
export function decodesNatively(stt: SttProvider, rateHz: number): boolean {
  if (rateHz === SAMPLE_RATE_HZ) return true;
  if (stt.capabilities?.telephoneRate === SAMPLE_RATE_HZ) return false;
  const rates = stt.capabilities?.inputSampleRates;
  return rates === 'any' || (rates?.includes(rateHz) ?? false);
}

/** Opens `stt` for a call whose audio is at `rateHz`: write() then takes audio at that rate. */
export async function openRecogniser(stt: SttProvider, rateHz: CallSampleRate, options: SttOpenOptions): Promise<SttStream> {
  if (rateHz === SAMPLE_RATE_HZ) return stt.openStream(options);
  if (decodesNatively(stt, rateHz)) return stt.openStream({ ...options, sampleRateHz: rateHz });
  const upsampler = await createResampler(rateHz, SAMPLE_RATE_HZ);
  let stream: SttStream;
  try {
    stream = await stt.openStream({ ...options, sourceSampleRateHz: rateHz });
  } catch (error) {
    upsampler.close();
    throw error;
  }
  const inner = stream;
  return {
    write: (pcm) => inner.write(upsampler.process(pcm)),
    finalize: (signal) => inner.finalize(signal),
    close: async () => {
      try {
        await inner.close();
      } finally {
        upsampler.close();
      }
    },
    ...(inner.bias ? { bias: (phrases: readonly string[]) => inner.bias?.(phrases) } : {}),
    ...(inner.expect ? { expect: (expectation: Parameters<NonNullable<SttStream['expect']>>[0]) => inner.expect?.(expectation) } : {}),
    ...(inner.pendingMs ? { pendingMs: () => inner.pendingMs?.() ?? 0 } : {}),
  };
}

/** `tts` giving audio at `rateHz` (itself where it is 16 kHz). */
export function ttsAtRate(tts: TtsProvider, rateHz: CallSampleRate): TtsProvider {
  if (rateHz === SAMPLE_RATE_HZ) return tts;
  const native = tts.capabilities?.outputSampleRates?.includes(rateHz) === true;
  const ask = (options: TtsOptions | undefined): TtsOptions => (native ? { ...options, sampleRateHz: rateHz } : { ...options });
  const convert = (audio: AsyncIterable<Int16Array>): AsyncIterable<Int16Array> => (native ? audio : resampled(audio, rateHz));
  return {
    id: tts.id,
    ...(tts.capabilities ? { capabilities: tts.capabilities } : {}),
    defaultVoiceId: tts.defaultVoiceId,
    voices: () => tts.voices(),
    languages: () => tts.languages(),
    synthesize: (text, options) => convert(tts.synthesize(text, ask(options))),
    ...(tts.openTextStream
      ? {
          openTextStream: (options: TtsOptions): TtsTextStream | undefined => {
            const stream = tts.openTextStream?.(ask(options));
            if (!stream) return undefined;
            return {
              write: (text) => stream.write(text),
              flush: () => stream.flush(),
              end: () => stream.end(),
              audio: () => convert(stream.audio()),
              words: () => stream.words(),
            };
          },
        }
      : {}),
  };
}

/** 16 kHz audio as `rateHz`, one resampler per piece of speech (its filter state runs across the chunks). */
async function* resampled(audio: AsyncIterable<Int16Array>, rateHz: number): AsyncIterable<Int16Array> {
  const resampler = await createResampler(SAMPLE_RATE_HZ, rateHz);
  try {
    for await (const chunk of audio) {
      const out = resampler.process(chunk);
      if (out.length > 0) yield out;
    }
  } finally {
    resampler.close();
  }
}
