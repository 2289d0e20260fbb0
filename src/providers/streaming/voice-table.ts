import type { EnvReader } from '../../config/env-reader.ts';

/** One voice of a hosted speech provider: our `voice_id` and the provider's own id for it. */
export interface HostedVoice {
  /** The agent's `voice_id`, Retell-style: '11labs-Sarah', 'cartesia-<uuid>'. */
  voiceId: string;
  /** The provider's id of the voice (sent on the wire). */
  providerVoiceId: string;
  name: string;
  gender: 'male' | 'female' | null;
  accent?: string;
  description: string;
}

/**
 * The account's own voices from TTS_VOICES (`Name=provider-voice-id,...`), each `voice_id`
 * `${prefix}${Name}` (`by-name`, ElevenLabs) or `${prefix}${provider-voice-id}` (`by-id`,
 * Cartesia); a malformed entry is pushed to `problems` and skipped.
 */
export function configuredVoices(reader: EnvReader, problems: string[], prefix: string, idPattern: RegExp, named: 'by-name' | 'by-id' = 'by-name'): HostedVoice[] {
  const out: HostedVoice[] = [];
  for (const entry of reader.list('TTS_VOICES')) {
    const m = /^([A-Za-z0-9_.]{1,64})=(\S+)$/.exec(entry);
    if (!m || !idPattern.test(m[2]!)) {
      problems.push(`TTS_VOICES entries must be Name=voice-id (got "${entry.slice(0, 80)}")`);
      continue;
    }
    out.push({ voiceId: `${prefix}${named === 'by-name' ? m[1] : m[2]}`, providerVoiceId: m[2]!, name: m[1]!, gender: null, description: 'A voice of this account (TTS_VOICES).' });
  }
  return out;
}

/** The built-in voices and the configured ones, a configured voice replacing a built-in one of the same id. */
export function mergeVoices(builtIn: readonly HostedVoice[], configured: readonly HostedVoice[]): HostedVoice[] {
  const own = new Set(configured.map((v) => v.voiceId));
  return [...configured, ...builtIn.filter((v) => !own.has(v.voiceId))];
}
