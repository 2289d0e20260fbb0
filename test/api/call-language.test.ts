// The agent's language and voice reach the call's engines (issue 13, item 7): the recogniser is
// opened with the language, an LLM engine is told to reply in it, and the voice speaks.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EnergyVad, FakeLlm, FakeStt, FakeTts } from '../../src/providers/fake/fake.providers.ts';
import { concat, silence, startMediaServer, tone } from '../media/helpers.ts';

describe("an agent's language and voice in a call", () => {
  it('opens the recogniser in pt-BR, asks the LLM for Brazilian Portuguese, and speaks with the chosen voice', async () => {
    // Fakes that take any language, standing in for hosted engines.
    const stt = new FakeStt(['quero marcar'], { languages: ['*'] });
    const tts = new FakeTts({ msPerChar: 15, languages: ['*'] });
    const llm = new FakeLlm(['Olá! Como posso ajudar?', { text: 'Marcado.', toolCalls: [{ name: 'end_call', arguments: { goal_achieved: true } }] }, '{}']);
    const s = await startMediaServer('sqlite', { providers: { llm, stt, tts, vad: new EnergyVad(), async close() {} } });
    try {
      const engine = await s.api('POST', '/create-service-llm', { general_prompt: 'Marque consultas.' });
      const agent = await s.api('POST', '/create-agent', {
        response_engine: { type: 'service_llm', llm_id: engine.json.llm_id },
        language: 'pt-BR',
        voice_id: 'flite-slt',
      });
      assert.equal(agent.status, 201, JSON.stringify(agent.json));
      const client = await s.call(agent.json.agent_id);
      await client.waitFor('agent_stop_talking', 5_000);
      void client.play(concat(tone(600), silence(800)));
      const end = await client.ended;
      assert.equal(end.disconnection_reason, 'agent_hangup');
      assert.equal(stt.opened[0]?.language, 'pt-BR');
      assert.match(String(llm.requests[0]?.messages[0]?.content), /The caller speaks Brazilian Portuguese \(pt-BR\): always reply in Brazilian Portuguese\./);
      assert.ok(tts.voiceIds.length > 0 && tts.voiceIds.every((v) => v === 'flite-slt'), `voices used: ${tts.voiceIds.join(', ')}`);
    } finally {
      await s.close();
    }
  });
});
