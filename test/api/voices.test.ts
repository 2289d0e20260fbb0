// Languages and voices that are real (issue 13, item 7): GET /list-voices and GET /get-voice list
// the configured speech engine's voices; an agent's language and voice_id are checked against
// the engines at create-agent, update-agent and create-web-call, with a 400 that names what is
// supported; an agent saved for other engines is refused at create-web-call.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, createFlowAgent, sampleFlow, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { AgentRepository } from '../../src/storage/agent.repository.ts';

/** OpenAI-compatible engines that are never reached: listing and checking voices needs no request. */
const OPENAI_ENGINES = {
  TTS_PROVIDER: 'openai',
  TTS_BASE_URL: 'http://127.0.0.1:9/v1',
  STT_PROVIDER: 'openai',
  STT_BASE_URL: 'http://127.0.0.1:9/v1',
};

for (const kind of STORES) {
  describe(`voices and languages of the embedded engines on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    before(async () => {
      h = await startHarness(kind.name);
      ({ apiKey: key } = await h.account());
    });
    after(() => h.close());
    const req = (method: 'GET' | 'POST' | 'PATCH', url: string, body?: unknown) => h.request({ method, url, key, body });

    it("lists Flite's five voices, the default first, with provider, language and sample rate", async () => {
      const res = await req('GET', '/list-voices');
      assert.equal(res.status, 200);
      assert.deepEqual(res.json.map((v: any) => v.voice_id), ['flite-kal16', 'flite-slt', 'flite-rms', 'flite-awb', 'flite-kal']);
      for (const v of res.json) {
        assert.equal(v.provider, 'flite');
        assert.equal(v.language, 'en-US');
        assert.equal(v.multilingual, false);
        assert.ok(['male', 'female'].includes(v.gender));
        assert.ok(v.voice_name && v.description);
      }
      const rates = Object.fromEntries(res.json.map((v: any) => [v.voice_id, v.sample_rate_hz]));
      assert.equal(rates['flite-kal'], 8000, 'kal is the telephone-band voice');
      assert.equal(rates['flite-slt'], 16000);
      assert.equal((await h.request({ method: 'GET', url: '/list-voices' })).status, 401, 'needs an API key');
    });

    it('gets one voice, and answers 422 (not found) for a voice the engine lacks', async () => {
      const slt = await req('GET', '/get-voice/flite-slt');
      assert.equal(slt.status, 200);
      assert.equal(slt.json.gender, 'female');
      const missing = await req('GET', '/get-voice/11labs-Adrian');
      assert.equal(missing.status, 422, 'not found, in the status Retell gives it');
      assert.equal(missing.json.code, 'voice_not_found');
      assert.match(missing.json.message, /list-voices/);
    });

    it("refuses a Retell voice id at create-agent, naming valid voices and /list-voices", async () => {
      const { json: flow } = await req('POST', '/create-conversation-flow', sampleFlow());
      const engine = { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id };
      const res = await req('POST', '/create-agent', { response_engine: engine, voice_id: '11labs-Adrian' });
      assert.equal(res.status, 400);
      assert.equal(res.json.code, 'invalid_request');
      assert.match(res.json.message, /voice_id "11labs-Adrian" is not a voice of this server's speech engine \(flite\)/);
      assert.match(res.json.message, /flite-kal16, flite-slt, flite-rms/);
      assert.match(res.json.message, /GET \/list-voices lists all 5/);
      assert.deepEqual(res.json.details, { field: 'voice_id', provider: 'flite', voices: ['flite-kal16', 'flite-slt', 'flite-rms'] });
      const ok = await req('POST', '/create-agent', { response_engine: engine, voice_id: 'flite-awb' });
      assert.equal(ok.status, 201);
      assert.equal(ok.json.voice_id, 'flite-awb');
      const defaulted = await req('POST', '/create-agent', { response_engine: engine });
      assert.equal(defaulted.json.voice_id, 'flite-kal16', "the engine's default voice");
    });

    it('refuses a language the embedded engines do not speak, naming en-US', async () => {
      const { json: flow } = await req('POST', '/create-conversation-flow', sampleFlow());
      const engine = { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id };
      for (const language of ['fr-FR', 'en-GB', 'en']) {
        const res = await req('POST', '/create-agent', { response_engine: engine, language });
        assert.equal(res.status, 400, language);
        assert.match(res.json.message, new RegExp(`language "${language}" is not supported`));
        assert.match(res.json.message, /the recogniser \(pocketsphinx\) takes en-US; the speech engine \(flite\) takes en-US/);
      }
      assert.equal((await req('POST', '/create-agent', { response_engine: engine, language: 'en-us' })).status, 201, 'tags compare case-insensitively');
    });

    it('checks update-agent and the agent override of create-web-call the same way', async () => {
      const { agentId } = await createFlowAgent(h, key);
      const voice = await req('PATCH', `/update-agent/${agentId}`, { voice_id: 'openai-Alloy' });
      assert.equal(voice.status, 400);
      assert.match(voice.json.message, /^voice_id "openai-Alloy"/);
      assert.match(voice.json.message, /Retell's id of an OpenAI voice, and no such provider is configured here: configure TTS_PROVIDER=openai/, 'issue 25: says which provider would take it');
      const language = await req('PATCH', `/update-agent/${agentId}`, { language: 'de-DE' });
      assert.equal(language.status, 400);
      assert.equal((await req('GET', `/get-agent/${agentId}`)).json.version, 1, 'no version was made');
      assert.equal((await req('PATCH', `/update-agent/${agentId}`, { voice_id: 'flite-rms' })).status, 200);

      const call = (agent: Record<string, unknown>) => req('POST', '/v2/create-web-call', { agent_id: agentId, agent_override: { agent } });
      const badVoice = await call({ voice_id: '11labs-Adrian' });
      assert.equal(badVoice.status, 400);
      assert.match(badVoice.json.message, /^agent_override\.agent\.voice_id "11labs-Adrian"/);
      const badLanguage = await call({ language: 'es-ES' });
      assert.equal(badLanguage.status, 400);
      assert.match(badLanguage.json.message, /^agent_override\.agent\.language "es-ES"/);
      assert.equal((await call({ voice_id: 'flite-slt' })).status, 201);
    });

    it('refuses a call on an agent saved with a voice these engines no longer offer, and says how to fix it', async () => {
      const { agentId } = await createFlowAgent(h, key);
      // The agent was saved while the server spoke with OpenAI's voices: its version names 'alloy'.
      const repo = new AgentRepository(h.runtime.store);
      const accountId = (await h.runtime.services.accounts.authenticate(`Bearer ${key}`)).accountId;
      const current = await repo.findAgentVersion(accountId, agentId);
      assert.ok(current);
      await h.runtime.store.transaction((trx) =>
        repo.appendVersion(accountId, { ...current.version, version: 2, config: { ...current.version.config, voice_id: 'alloy' }, created_at: h.clock.now() }, trx),
      );
      const refused = await req('POST', '/v2/create-web-call', { agent_id: agentId });
      assert.equal(refused.status, 400);
      assert.match(refused.json.message, new RegExp(`Agent ${agentId} version 2 cannot run on this server's speech engines: voice_id "alloy"`));
      assert.match(refused.json.message, /update-agent/);
      const overridden = await req('POST', '/v2/create-web-call', { agent_id: agentId, agent_override: { agent: { voice_id: 'flite-kal16' } } });
      assert.equal(overridden.status, 201, 'an override with a voice of these engines runs it');
      assert.equal((await req('POST', '/v2/create-web-call', { agent_id: agentId, agent_version: 1 })).status, 201, 'version 1 is fine');
    });

    it('describes the voice routes in the OpenAPI document', async () => {
      const doc = (await h.request({ method: 'GET', url: '/openapi.json' })).json;
      const list = doc.paths['/list-voices'].get;
      assert.equal(list.operationId, 'listVoices');
      assert.deepEqual(list.tags, ['voices']);
      const items = list.responses['200'].content['application/json'].schema.items;
      assert.equal(items.$ref, '#/components/schemas/Voice', 'the voice is a named component');
      const item = doc.components.schemas.Voice;
      for (const field of ['voice_id', 'voice_name', 'provider', 'gender', 'language', 'sample_rate_hz']) assert.ok(item.properties[field], field);
      assert.equal(doc.paths['/get-voice/{voice_id}'].get.operationId, 'getVoice');
    });
  });
}

describe('voices and languages of the OpenAI-compatible engines', () => {
  let h: Harness;
  let key: string;
  before(async () => {
    h = await startHarness('sqlite', OPENAI_ENGINES);
    ({ apiKey: key } = await h.account());
  });
  after(() => h.close());
  const req = (method: 'GET' | 'POST', url: string, body?: unknown) => h.request({ method, url, key, body });

  it("lists OpenAI's documented voices, multilingual, the configured default first", async () => {
    const res = await req('GET', '/list-voices');
    assert.equal(res.status, 200);
    const ids = res.json.map((v: any) => v.voice_id);
    assert.equal(ids[0], 'alloy');
    for (const id of ['ash', 'coral', 'echo', 'fable', 'nova', 'onyx', 'sage', 'shimmer', 'ballad', 'verse']) assert.ok(ids.includes(id), id);
    assert.ok(res.json.every((v: any) => v.provider === 'openai' && v.multilingual === true && v.sample_rate_hz === 24000));
  });

  it('takes the documented languages in any region, refuses others, and points a Retell id to ours', async () => {
    const { json: flow } = await req('POST', '/create-conversation-flow', sampleFlow());
    const engine = { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id };
    const created = await req('POST', '/create-agent', { response_engine: engine, language: 'pt-BR' });
    assert.equal(created.status, 201);
    assert.equal(created.json.voice_id, 'alloy', "without voice_id: the engine's default voice");
    const klingon = await req('POST', '/create-agent', { response_engine: engine, language: 'tlh' });
    assert.equal(klingon.status, 400);
    assert.match(klingon.json.message, /the recogniser \(openai-transcription\) takes af, ar, .*zh \(a two- or three-letter code takes its regional tags too/);
    // Retell's voice ids name the configured provider's voice (issue 26): OpenAI's alloy here; ElevenLabs is not configured.
    const retell = await req('POST', '/create-agent', { response_engine: engine, voice_id: 'openai-Alloy' });
    assert.equal(retell.status, 201);
    assert.equal(retell.json.voice_id, 'openai-Alloy', 'answered as given');
    const call = await req('POST', '/v2/create-web-call', { agent_id: retell.json.agent_id });
    assert.equal(call.status, 201, 'a call on it is taken');
    assert.equal((await req('GET', '/get-voice/openai-Alloy')).json.voice_id, 'alloy', 'get-voice answers the voice a Retell id names');
    const elevenLabs = await req('POST', '/create-agent', { response_engine: engine, voice_id: '11labs-Adrian' });
    assert.equal(elevenLabs.status, 400);
    assert.match(elevenLabs.json.message, /^voice_id "11labs-Adrian" is not a voice of this server's speech engine \(openai-speech\)\..*A Retell voice id \(e\.g\. 11labs-Adrian\) is taken when a configured provider has that voice/);
    assert.equal((await req('POST', '/create-agent', { response_engine: engine, voice_id: 'flite-kal16' })).status, 400, 'a Flite voice is not an OpenAI voice');
  });
});
