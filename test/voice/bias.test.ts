// Vocabulary biasing: before each user turn the pipeline hands the recogniser the agent's boosted
// keywords plus what the engine expects next (ResponseEngine.expectedPhrases): the current node's
// keywords, the words of the values it extracts, names among the call's variables.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeLlm, FakeStt, FakeTts, EnergyVad } from '../../src/providers/fake/fake.providers.ts';
import type { SttOpenOptions, SttProvider } from '../../src/providers/stt.ts';
import { FlowEngine } from '../../src/voice/engines/flow.engine.ts';
import { LlmEngine } from '../../src/voice/engines/llm.engine.ts';
import { mergePhrases, MAX_EXPECTED_PHRASES, namesFromVariables } from '../../src/voice/engines/expected.ts';
import type { ConversationFlow } from '../../src/voice/engines/types.ts';
import { TestClock, feed, makePipeline, silence, tone, concat } from './harness.ts';

const flow: ConversationFlow = {
  start_node_id: 'greet',
  nodes: [
    {
      id: 'greet', type: 'conversation', instruction: { type: 'static_text', text: 'Hello {{customer_name}}. Do you want to book an appointment?' },
      edges: [
        { id: 'e1', destination_node_id: 'number', transition_condition: { type: 'keyword', keywords: ['appointment', 'Book'] } },
        { id: 'e2', destination_node_id: 'bye', transition_condition: { type: 'always' } },
      ],
    },
    {
      id: 'number', type: 'conversation', instruction: { type: 'static_text', text: 'Your number, please?' },
      extract_variables: [{ name: 'phone', type: 'digits', description: 'phone number' }],
      edges: [{ id: 'e3', destination_node_id: 'bye', transition_condition: { type: 'always' } }],
    },
    { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Goodbye.' } },
  ],
};

/** The fake recogniser, recording what it is told to expect. */
function recording(stt: FakeStt) {
  const log: Array<{ kind: 'open' | 'bias'; phrases: readonly string[] }> = [];
  const provider: SttProvider = {
    id: stt.id,
    languages: () => stt.languages(),
    async openStream(options?: SttOpenOptions) {
      log.push({ kind: 'open', phrases: options?.keywords ?? [] });
      const s = await stt.openStream(options);
      return { ...s, bias: (phrases) => log.push({ kind: 'bias', phrases }) };
    },
  };
  return { provider, log };
}

test('the recogniser is told the boosted keywords and what the current node expects, before each user turn', async () => {
  const clock = new TestClock();
  const { provider, log } = recording(new FakeStt(['i want to book an appointment', 'five five five one two']));
  const engine = new FlowEngine({ flow, variables: () => ({ dynamic: { customer_name: 'Alice Johnson', city: 'Paris' } }) });
  const p = makePipeline({ stt: provider, tts: new FakeTts({ msPerChar: 10 }), vad: new EnergyVad(), engine, boostedKeywords: ['Switchboard'] }, clock);
  await p.start();
  const start = ['switchboard', 'appointment', 'book', 'alice johnson', 'alice', 'johnson'];
  assert.deepEqual(log[0], { kind: 'open', phrases: start });
  await feed(p, clock, silence(2500));
  // After the greeting: the same node, so the same words.
  assert.deepEqual(log.at(-1), { kind: 'bias', phrases: start });
  await feed(p, clock, concat(tone(800), silence(2000)));
  // At the 'number' node: digits.
  assert.deepEqual(log.at(-1)!.phrases, ['switchboard', 'zero', 'oh', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'alice johnson', 'alice', 'johnson']);
  await p.close();
});

test('an LLM agent expects the names among its variables; an engine without expectedPhrases gives only the boosted keywords', async () => {
  const clock = new TestClock();
  const { provider, log } = recording(new FakeStt([]));
  const engine = new LlmEngine({ config: { begin_message: '' }, llm: new FakeLlm([]), variables: () => ({ dynamic: { first_name: 'Zoë' } }) });
  const p = makePipeline({ stt: provider, tts: new FakeTts(), vad: new EnergyVad(), engine, boostedKeywords: ['Acme'] }, clock);
  await p.start();
  assert.deepEqual(log[0]!.phrases, ['acme', 'zoë']);
  await p.close();

  const bare = recording(new FakeStt([]));
  const { begin, respond, agentSpoke, outcome } = engine;
  const minimal = { begin: begin.bind(engine), respond: respond.bind(engine), agentSpoke: agentSpoke.bind(engine), outcome: outcome.bind(engine) };
  const q = makePipeline({ stt: bare.provider, tts: new FakeTts(), vad: new EnergyVad(), engine: minimal, boostedKeywords: ['Acme'] }, new TestClock());
  await q.start();
  assert.deepEqual(bare.log[0]!.phrases, ['acme']);
  await q.close();
});

test('phrases are normalized, de-duplicated and capped; names come only from variables named like a name', () => {
  assert.deepEqual(mergePhrases(['Book!', 'book', '  Front   Desk '], ['']), ['book', 'front desk']);
  assert.equal(mergePhrases(Array.from({ length: 300 }, (_, i) => `w${i}`)).length, MAX_EXPECTED_PHRASES);
  assert.deepEqual(namesFromVariables({ name: 'Bob', customer_name: 'Ann Lee', surname_hint: 'x', company: 'Acme' }), ['bob', 'bob', 'ann lee', 'ann', 'lee']);
});
