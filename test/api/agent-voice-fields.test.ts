// Retell's agent fields that reach the synthesiser in a real call (issue 26, item 7):
// `voice_speed` and `pronunciation_dictionary` go with every piece of the agent's speech, while
// the transcript keeps the words as written; phonemes no synthesiser reads are a 400.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { EnergyVad, FakeStt, FakeTts } from '../../src/providers/fake/fake.providers.ts';
import { type MediaServer, startMediaServer } from '../media/helpers.ts';

const GREETING = 'Welcome to Zorblax, goodbye.';
const DICTIONARY = [{ word: 'Zorblax', alphabet: 'ipa', phoneme: 'ˈzɔrblæks' }];

describe("an agent's voice_speed and pronunciation_dictionary in a call", () => {
  let s: MediaServer;
  const tts = new FakeTts({ msPerChar: 5 });
  let flowId: string;

  before(async () => {
    s = await startMediaServer('sqlite', { providers: { llm: undefined, stt: new FakeStt([]), tts, vad: new EnergyVad(), async close() {} } });
    const flow = await s.api('POST', '/create-conversation-flow', {
      start_speaker: 'agent',
      start_node_id: 'bye',
      nodes: [{ id: 'bye', type: 'end', instruction: { type: 'static_text', text: GREETING } }],
    });
    assert.equal(flow.status, 201, JSON.stringify(flow.json));
    flowId = flow.json.conversation_flow_id;
  });
  after(() => s?.close());

  it('synthesises at the agent speed with its dictionary; the transcript keeps the words', async () => {
    const agent = await s.api('POST', '/create-agent', {
      response_engine: { type: 'conversation-flow', conversation_flow_id: flowId },
      voice_speed: 1.5,
      pronunciation_dictionary: DICTIONARY,
    });
    assert.equal(agent.status, 201, JSON.stringify(agent.json));
    assert.deepEqual([agent.json.voice_speed, agent.json.pronunciation_dictionary, agent.json.accepted_without_effect], [1.5, DICTIONARY, []], "both fields now change the call");
    const client = await s.call(agent.json.agent_id);
    const end = await client.ended;
    assert.equal(end.disconnection_reason, 'agent_hangup');
    assert.ok(tts.styles.length > 0);
    for (const style of tts.styles) assert.deepEqual(style, { speed: 1.5, pronunciations: DICTIONARY });
    const call = await s.api('GET', `/v2/get-call/${client.callId}`);
    assert.match(JSON.stringify(call.json.transcript_object ?? call.json.transcript), /Zorblax/);
  });

  it('refuses phonemes no synthesiser reads, naming the entry', async () => {
    const engine = { type: 'conversation-flow', conversation_flow_id: flowId };
    const cmu = await s.api('POST', '/create-agent', { response_engine: engine, pronunciation_dictionary: [DICTIONARY[0], { word: 'x', alphabet: 'cmu', phoneme: 'K Q' }] });
    assert.equal(cmu.status, 400);
    assert.match(cmu.json.message, /pronunciation_dictionary\.1\.phoneme: "Q" is not a CMU ARPAbet phone/);
    const ipa = await s.api('POST', '/create-agent', { response_engine: engine, pronunciation_dictionary: [{ word: 'x', alphabet: 'ipa', phoneme: 'ʁa' }] });
    assert.equal(ipa.status, 400);
    assert.match(ipa.json.message, /pronunciation_dictionary\.0\.phoneme: "ʁ" is not an English IPA sound/);
  });
});
