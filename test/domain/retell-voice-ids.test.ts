/**
 * Retell's voice ids (`11labs-Adrian`, `openai-Alloy`, `cartesia-Cleo`) name the configured
 * provider's voice, by id or name in any case (issue 26, item 7); anything else names nothing.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { matchVoice } from '../../src/domain/voice.ts';

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
