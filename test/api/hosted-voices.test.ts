// The hosted speech providers' voices over real HTTP (issue 25, item 6): with ElevenLabs or
// Cartesia configured, GET /list-voices offers their voices with Retell-style ids, and an agent's
// voice_id is checked against them. No request reaches the providers (the doctor's probe is off).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, sampleFlow, startHarness } from '../helpers/harness.ts';

const PROVIDERS = [
  { id: 'elevenlabs', env: { TTS_PROVIDER: 'elevenlabs', TTS_API_KEY: 'k' }, first: '11labs-Sarah', other: '11labs-George', prefix: '11labs-', count: 21 },
  { id: 'cartesia', env: { TTS_PROVIDER: 'cartesia', TTS_API_KEY: 'k' }, first: 'cartesia-f786b574-daa5-4673-aa0c-cbe3e8534c02', other: 'cartesia-9626c31c-bec5-4cca-baa8-f8ba9e84c8bc', prefix: 'cartesia-', count: 3 },
];

for (const p of PROVIDERS) {
  describe(`GET /list-voices with TTS_PROVIDER=${p.id}`, () => {
    let h: Harness;
    let key: string;
    before(async () => {
      h = await startHarness('sqlite', { ...p.env, PROVIDER_PROBE_TIMEOUT_MS: '0' });
      ({ apiKey: key } = await h.account());
    });
    after(() => h.close());
    const req = (method: 'GET' | 'POST', url: string, body?: unknown) => h.request({ method, url, key, body });

    it(`lists its voices as ${p.prefix}..., the default first, and agents take them`, async () => {
      const res = await req('GET', '/list-voices');
      assert.equal(res.status, 200);
      const ids = res.json.map((v: any) => v.voice_id);
      assert.equal(ids[0], p.first);
      assert.equal(ids.length, p.count);
      assert.ok(res.json.every((v: any) => v.voice_id.startsWith(p.prefix) && v.provider === p.id && v.sample_rate_hz === 16000 && v.voice_name), JSON.stringify(res.json[0]));
      const { json: flow } = await req('POST', '/create-conversation-flow', sampleFlow());
      const engine = { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id };
      const ok = await req('POST', '/create-agent', { response_engine: engine, voice_id: p.other });
      assert.equal(ok.status, 201, JSON.stringify(ok.json));
      const defaulted = await req('POST', '/create-agent', { response_engine: engine });
      assert.equal(defaulted.json.voice_id, p.first);
      const refused = await req('POST', '/create-agent', { response_engine: engine, voice_id: 'flite-kal16' });
      assert.equal(refused.status, 400);
      assert.match(refused.json.message, new RegExp(`not a voice of this server's speech engine \\(${p.id}\\)`));
    });
  });
}
