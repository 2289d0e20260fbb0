/**
 * Retell's voice ids (`11labs-Adrian`, `openai-Alloy`, `cartesia-Cleo`) name the configured
 * provider's voice, by id or name in any case (issue 26, item 7); anything else names nothing.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { matchVoice, voiceProblem } from '../../src/domain/voice.ts';

const voices = [
  { voice_id: 'flite-kal16', voice_name: 'Kal', provider: 'flite' },
  { voice_id: 'alloy', voice_name: 'Alloy', provider: 'openai' },
  { voice_id: 'pNInz6obpgDQGcFmaJgB', voice_name: 'Adam', provider: 'elevenlabs' },
  { voice_id: 'cleo-id', voice_name: 'Cleo', provider: 'cartesia' },
];

it("finds a voice by its own id, or by Retell's {provider}-{Name} id", () => {
  assert.equal(matchVoice(voices, 'flite-kal16')?.voice_id, 'flite-kal16');
  assert.equal(matchVoice(voices, 'openai-Alloy')?.voice_id, 'alloy');
  assert.equal(matchVoice(voices, '11labs-Adam')?.voice_id, 'pNInz6obpgDQGcFmaJgB', "ElevenLabs' voice, by its name");
  assert.equal(matchVoice(voices, 'cartesia-cleo')?.voice_id, 'cleo-id');
});

it('names nothing when no configured provider has the voice', () => {
  assert.equal(matchVoice(voices, '11labs-Adrian'), undefined);
  assert.equal(matchVoice(voices, 'openai-Kal'), undefined, "a name of another provider's voice");
  assert.equal(matchVoice(voices, 'flite-Kal'), undefined, 'flite is not a Retell prefix');
  assert.equal(matchVoice(voices, 'Alloy'), undefined);
});

// Issue 25: an `openai-...` id (and the other Retell prefixes) refused with the reason and the setting that would take it.
const catalog = (voice: Array<{ voice_id: string; voice_name: string; provider: string }>, id: string) => ({
  recogniser: { id: 'pocketsphinx', languages: ['en-US'] },
  synthesiser: { id, languages: ['en-US'], voices: voice.map((v) => ({ ...v, gender: null, accent: null, age: null, preview_audio_url: null })) as never, defaultVoiceId: voice[0]!.voice_id },
});

it("refuses a Retell id whose provider is not configured, naming the provider and the setting that configures it", () => {
  const flite = catalog([voices[0]!], 'flite');
  const problem = voiceProblem(flite, 'openai-Alloy');
  assert.match(problem?.message ?? '', /^voice_id "openai-Alloy" is not a voice of this server's speech engine \(flite\)\./);
  assert.match(problem?.message ?? '', /"openai-Alloy" is Retell's id of an OpenAI voice, and no such provider is configured here: configure TTS_PROVIDER=openai/);
  assert.match(voiceProblem(flite, '11labs-Adrian')?.message ?? '', /an ElevenLabs voice, and no such provider is configured here: configure TTS_PROVIDER=elevenlabs/);
  assert.match(voiceProblem(flite, 'cartesia-Cleo')?.message ?? '', /a Cartesia voice, and no such provider is configured here: configure TTS_PROVIDER=cartesia/);
  assert.doesNotMatch(voiceProblem(flite, 'nobody')?.message ?? '', /Retell's id of/);

  const openai = catalog([voices[1]!], 'openai-speech');
  assert.equal(voiceProblem(openai, 'openai-Alloy'), null);
  assert.match(voiceProblem(openai, 'openai-Kal')?.message ?? '', /"openai-Kal" names an OpenAI voice by Retell's id, and the configured provider has no voice of that name/);
});
