import { matchVoice } from '../domain/voice.ts';
import type { Logger } from '../lib/logger.ts';
import type { TtsProvider } from '../providers/tts.ts';
import { VoiceChain } from '../voice/voice-fallback.ts';

/**
 * The synthesiser and voice a call speaks with: the agent's `voice_id` and, when the agent has
 * `fallback_voice_ids` (Retell's, issue 26), those voices tried in order when a voice's provider
 * fails before its first audio (voice/voice-fallback.ts). A Retell voice id ('openai-Alloy') is
 * spoken by the configured voice it names (domain/voice.ts). A fallback voice no configured
 * provider has any more (the agent was saved while the server ran other providers) is skipped.
 */
export function callVoices(tts: TtsProvider, settings: { voice_id: string; fallback_voice_ids?: readonly string[] | null | undefined }, log: Logger): { tts: TtsProvider; voiceId: string } {
  const voices = tts.voices();
  const voiceId = matchVoice(voices, settings.voice_id)?.voice_id ?? settings.voice_id;
  const fallbacks: string[] = [];
  for (const id of settings.fallback_voice_ids ?? []) {
    const found = matchVoice(voices, id)?.voice_id;
    if (found === undefined) log.warn({ voiceId: id }, 'fallback voice not configured on this server: skipped');
    else if (found !== voiceId && !fallbacks.includes(found)) fallbacks.push(found);
  }
  if (fallbacks.length === 0) return { tts, voiceId };
  const chain = new VoiceChain(tts, [voiceId, ...fallbacks], ({ from, to, error }) =>
    log.warn({ from, to, err: error }, "voice's provider failed before its first audio: the call speaks with the next fallback voice from now on"),
  );
  return { tts: chain, voiceId };
}
