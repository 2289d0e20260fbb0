/**
 * Retell's agent fields through the real `retell-sdk` against a listening server, on both stores
 * (issue 26, item 7): every field a Retell user sends is taken; those that change nothing here are
 * listed in the answer's `accepted_without_effect`, never silently; `opt_out_sensitive_data_storage`
 * is our storage policy; a bad value is a 400 naming the field.
 */
import assert from 'node:assert/strict';
import type net from 'node:net';
import { after, before, describe, it } from 'node:test';
import Retell from 'retell-sdk';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

type Json = Record<string, any>;
const json = (value: unknown) => value as Json;

/** Retell's fields as a Retell user writes them, with values that would change a call there. */
const RETELL_FIELDS = {
  voice_speed: 1.2,
  voice_temperature: 0.5,
  volume: 1.5,
  begin_message_delay_ms: 1000,
  normalize_for_speech: true,
  pronunciation_dictionary: [{ word: 'actually', alphabet: 'ipa', phoneme: 'ˈæktʃuəli' }],
  enable_backchannel: true,
  backchannel_frequency: 0.8,
  backchannel_words: ['mm-hm', 'yeah'],
  ambient_sound: 'coffee-shop',
  ambient_sound_volume: 0.5,
  fallback_voice_ids: ['flite-slt'],
  stt_mode: 'accurate',
  enable_voicemail_detection: true,
  voicemail_option: { action: { type: 'hangup' } },
  webhook_timeout_ms: 5000,
  version_description: 'Front desk, first cut',
  version_title: 'v1',
  is_public: false,
  post_call_analysis_model: 'gpt-4.1-mini',
} as const;

for (const kind of STORES) {
  describe(`retell-sdk agent fields on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let retell: Retell;
    let flowId: string;

    before(async () => {
      h = await startHarness(kind.name);
      const { apiKey } = await h.account();
      await h.app.listen({ port: 0, host: '127.0.0.1' });
      retell = new Retell({ apiKey, baseURL: `http://127.0.0.1:${(h.app.server.address() as net.AddressInfo).port}`, maxRetries: 0 });
      flowId = json(await retell.conversationFlow.create({ start_speaker: 'agent', nodes: [{ id: 'n', type: 'end', instruction: { type: 'static_text', text: 'Bye.' } }], start_node_id: 'n' } as never)).conversation_flow_id;
    });
    after(() => h?.close());

    const engine = () => ({ type: 'conversation-flow' as const, conversation_flow_id: flowId });

    it("takes Retell's fields, answers them, and lists those without effect", async () => {
      const agent = json(await retell.agent.create({ voice_id: 'flite-kal16', response_engine: engine(), ...RETELL_FIELDS } as never));
      for (const [field, value] of Object.entries(RETELL_FIELDS)) assert.deepEqual(agent[field], value, field);
      assert.deepEqual(agent.accepted_without_effect, [
        'voice_temperature',
        'ambient_sound',
        'ambient_sound_volume',
        'stt_mode',
        'post_call_analysis_model',
        'version_title',
      ], 'volume, normalize_for_speech, begin_message_delay_ms, voice_speed, pronunciation_dictionary, the backchannel fields, fallback_voice_ids, webhook_timeout_ms and the voicemail fields change the call; is_public false asks for nothing');
      assert.deepEqual(json(await retell.agent.retrieve(agent.agent_id)).accepted_without_effect, agent.accepted_without_effect);

      const neutral = json(
        await retell.agent.update(agent.agent_id, {
          voice_speed: 1, voice_temperature: 1, ambient_sound_volume: 1, begin_message_delay_ms: 0, pronunciation_dictionary: null, enable_backchannel: false,
          backchannel_frequency: undefined, backchannel_words: [], ambient_sound: null, fallback_voice_ids: null, enable_voicemail_detection: false, voicemail_option: null, post_call_analysis_model: null, version_title: null,
        } as never),
      );
      assert.deepEqual(neutral.accepted_without_effect, ['stt_mode'], 'set to their neutral values, the others ask for nothing');

      const plain = json(await retell.agent.create({ voice_id: 'flite-kal16', response_engine: engine() }));
      assert.deepEqual([plain.accepted_without_effect, plain.volume, plain.normalize_for_speech, plain.voice_speed, plain.pronunciation_dictionary], [[], 1, false, 1, null]);
    });

    it('maps opt_out_sensitive_data_storage onto the storage policy', async () => {
      const agent = json(await retell.agent.create({ voice_id: 'flite-kal16', response_engine: engine(), opt_out_sensitive_data_storage: true } as never));
      assert.deepEqual([agent.opt_out_sensitive_data_storage, agent.data_storage_setting], [true, 'basic_attributes_only']);
      const call = json(await retell.call.createWebCall({ agent_id: agent.agent_id }));
      assert.equal(call.data_storage_setting, 'basic_attributes_only', "the agent's calls store no transcript or recording");
      await assert.rejects(
        retell.agent.update(agent.agent_id, { data_storage_setting: 'everything' }),
        (e: unknown) => e instanceof Retell.BadRequestError && /opt_out_sensitive_data_storage is true.*data_storage_setting is everything/.test(e.message),
      );
      const off = json(await retell.agent.update(agent.agent_id, { opt_out_sensitive_data_storage: false, data_storage_setting: 'everything' } as never));
      assert.deepEqual([off.opt_out_sensitive_data_storage, off.data_storage_setting], [false, 'everything']);
    });

    it("takes a flow's model_choice as its model, and start_speaker", async () => {
      const flow = json(
        await retell.conversationFlow.create({
          model_choice: { type: 'cascading', model: 'gpt-4.1-mini', high_priority: true },
          start_speaker: 'user',
          start_node_id: 'n',
          nodes: [{ id: 'n', type: 'end', instruction: { type: 'static_text', text: 'Bye.' } }],
        } as never),
      );
      assert.deepEqual([flow.model, flow.start_speaker], ['gpt-4.1-mini', 'user']);
      const updated = json(await retell.conversationFlow.update(flow.conversation_flow_id, { model_choice: { type: 'cascading', model: 'gpt-4.1' } } as never));
      assert.equal(updated.model, 'gpt-4.1');
      await assert.rejects(
        retell.conversationFlow.update(flow.conversation_flow_id, { model_choice: { type: 'realtime', model: 'x' } } as never),
        (e: unknown) => e instanceof Retell.BadRequestError && /body\/model_choice must be/.test(e.message),
      );
    });

    it('refuses a bad value with a 400 naming the field', async () => {
      const refused = async (body: Record<string, unknown>, field: RegExp) =>
        assert.rejects(retell.agent.create({ voice_id: 'flite-kal16', response_engine: engine(), ...body }), (e: unknown) => e instanceof Retell.BadRequestError && field.test(e.message));
      await refused({ volume: 3 }, /body\/volume/);
      await refused({ voice_speed: 0.2 }, /body\/voice_speed/);
      await refused({ begin_message_delay_ms: 6000 }, /body\/begin_message_delay_ms/);
      await refused({ ambient_sound: 'rain' }, /body\/ambient_sound/);
      await refused({ pronunciation_dictionary: [{ word: 'a', alphabet: 'xsampa', phoneme: 'a' }] }, /body\/pronunciation_dictionary\/0\/alphabet/);
      await refused({ no_such_field: 1 }, /unknown field: no_such_field/);
      // Issue 26: a fallback voice no configured provider speaks, as voice_id is (domain/voice.ts).
      await refused({ fallback_voice_ids: ['flite-slt', 'openai-Alloy'] }, /^400 fallback_voice_ids "openai-Alloy" is not a voice of this server's speech engine \(flite\).*configure TTS_PROVIDER=openai/);
      await refused({ fallback_voice_ids: ['nobody'] }, /fallback_voice_ids "nobody"/);
      const agent = json(await retell.agent.create({ voice_id: 'flite-kal16', response_engine: engine() }));
      await assert.rejects(retell.agent.update(agent.agent_id, { fallback_voice_ids: ['11labs-Adrian'] }), (e: unknown) => e instanceof Retell.BadRequestError && /fallback_voice_ids "11labs-Adrian"/.test(e.message));
      assert.equal(json(await retell.agent.retrieve(agent.agent_id)).fallback_voice_ids, undefined, 'the refused update changed nothing');
    });
  });
}
