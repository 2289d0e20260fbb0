import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AGENT_DEFAULTS, type AgentConfig, type EngineSnapshot, engineWithOverride, settingsWithOverride } from '../../src/domain/agent.ts';

const config: AgentConfig = { ...AGENT_DEFAULTS, response_engine: { type: 'service_llm', llm_id: 'llm_1' }, agent_name: 'Front desk', webhook_url: 'https://example.com/hook' };

describe('agent_override', () => {
  it('replaces the settings it gives, keeps those it leaves out or leaves undefined, and may clear one with null', () => {
    const settings = settingsWithOverride(config, { agent: { voice_id: 'flite-slt', language: undefined, webhook_url: null } });
    assert.equal(settings.voice_id, 'flite-slt');
    assert.equal(settings.language, config.language, 'undefined keeps the version\'s value');
    assert.equal(settings.webhook_url, null, 'null is a value');
    assert.equal(settings.agent_name, 'Front desk');
    assert.deepEqual(settingsWithOverride(config, null), config);
    assert.deepEqual(settingsWithOverride(config, {}), config);
  });

  it('applies the engine part that matches the engine, field by field, and leaves a custom LLM alone', () => {
    const llm: EngineSnapshot = { type: 'service_llm', llm_id: 'llm_1', definition: { general_prompt: 'Be brief.', model: 'small', begin_message: 'Hello.' } };
    assert.deepEqual(engineWithOverride(llm, { service_llm: { model: 'large', begin_message: undefined } }), {
      type: 'service_llm',
      llm_id: 'llm_1',
      definition: { general_prompt: 'Be brief.', model: 'large', begin_message: 'Hello.' },
    });
    assert.deepEqual(engineWithOverride(llm, undefined), llm);
    const custom: EngineSnapshot = { type: 'custom_llm', llm_websocket_url: 'wss://example.com/llm' };
    assert.equal(engineWithOverride(custom, { service_llm: { model: 'large' } }), custom);
  });
});
