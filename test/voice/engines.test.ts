import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FlowEngine, flowNeedsLlm, equationsHold, keywordMatch } from '../../src/voice/engines/flow.engine.ts';
import { LlmEngine } from '../../src/voice/engines/llm.engine.ts';
import { FakeLlm } from '../../src/providers/fake/fake.providers.ts';
import type { ConversationFlow, EngineOutput, LeadFields, CallVariables } from '../../src/voice/engines/types.ts';
import { extractDigits, extractEmail, extractName, extractNumber, extractVariable, extractYesNo } from '../../src/voice/engines/extract.ts';
import { resolveVariables, renderTemplate } from '../../src/voice/engines/variables.ts';

async function say(it: AsyncIterable<EngineOutput>): Promise<string[]> {
  const out: string[] = [];
  for await (const o of it) out.push(o.type === 'text' ? o.text : o.type === 'hangup' ? `<${o.reason}>` : `<${o.type}>`);
  return out;
}
const sig = (): AbortSignal => new AbortController().signal;

const leadFlow: ConversationFlow = {
  start_node_id: 'hello',
  default_dynamic_variables: { company: 'Acme' },
  nodes: [
    {
      id: 'hello', type: 'conversation', instruction: { type: 'static_text', text: 'Welcome to {{company}}. What is your name?' },
      extract_variables: [{ name: 'name', type: 'name' }],
      edges: [{ id: 'e1', destination_node_id: 'phone', transition_condition: { type: 'equation', equations: [{ left: '{{name}}', operator: 'exists' }], operator: '&&' } }],
    },
    {
      id: 'phone', type: 'conversation', instruction: { type: 'static_text', text: 'Thanks {{name}}. Your phone number?' },
      extract_variables: [{ name: 'phone', type: 'digits' }],
      edges: [
        { id: 'e2', destination_node_id: 'lead', transition_condition: { type: 'equation', equations: [{ left: 'phone', operator: 'exists' }], operator: '&&' } },
        { id: 'e3', destination_node_id: 'phone', transition_condition: { type: 'always' } },
      ],
    },
    { id: 'lead', type: 'create_lead', edges: [{ id: 'e4', destination_node_id: 'bye', transition_condition: { type: 'always' } }] },
    { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Done, {{name}}. Bye.' } },
  ],
};

test('flow: extracts a name and spoken digits, creates the lead, ends with agent_hangup', async () => {
  const leads: LeadFields[] = [];
  const e = new FlowEngine({ flow: leadFlow, tools: { createLead: async (f) => leads.push(f), createTicket: async () => {} } });
  assert.deepEqual(await say(e.begin(sig())), ['Welcome to Acme. What is your name?']);
  assert.deepEqual(await say(e.respond('hi my name is john', sig())), ['Thanks John. Your phone number?']);
  assert.deepEqual(await say(e.respond('umm it is', sig())), ['Thanks John. Your phone number?'], 'always edge loops back');
  assert.deepEqual(await say(e.respond('five five five one two three four', sig())), ['Done, John. Bye.', '<agent_hangup>']);
  assert.deepEqual(leads, [{ name: 'John', phone: '5551234' }]);
  assert.deepEqual(e.outcome().names, ['John']);
  assert.equal(e.outcome().reachedEnd, true);
});

test('flow: current_node_id starts there; overrides apply from the next turn', async () => {
  let vars: CallVariables = { dynamic: { company: 'Globex' } };
  const e = new FlowEngine({ flow: leadFlow, startNodeId: 'hello', variables: () => vars });
  assert.deepEqual(await say(e.begin(sig())), ['Welcome to Globex. What is your name?']);
  vars = { dynamic: { company: 'Globex' }, overrides: { name: 'Override' } };
  assert.deepEqual(await say(e.respond('my name is ann', sig())), ['Thanks Override. Your phone number?']);
  const e2 = new FlowEngine({ flow: leadFlow, startNodeId: 'bye' });
  assert.deepEqual(await say(e2.begin(sig())), ['Done, . Bye.', '<agent_hangup>']);
});

test('flow: keyword edges, prompt nodes and prompt edges use the LLM; flowNeedsLlm names the culprit', async () => {
  const flow: ConversationFlow = {
    start_node_id: 'a',
    global_prompt: 'You work for {{company}}.',
    default_dynamic_variables: { company: 'Acme' },
    nodes: [
      {
        id: 'a', type: 'conversation', instruction: { type: 'prompt', text: 'Greet the caller.' },
        edges: [
          { id: 'k', destination_node_id: 'b', transition_condition: { type: 'keyword', keywords: ['billing'] } },
          { id: 'p', destination_node_id: 'c', transition_condition: { type: 'prompt', prompt: 'The caller is angry' } },
        ],
      },
      { id: 'b', type: 'conversation', instruction: { type: 'static_text', text: 'Billing.' } },
      { id: 'c', type: 'end', instruction: { type: 'static_text', text: 'Sorry. Bye.' } },
    ],
  };
  assert.equal(flowNeedsLlm(flow), 'node a (prompt instruction)');
  assert.equal(flowNeedsLlm(leadFlow), null);
  assert.throws(() => new FlowEngine({ flow: { start_node_id: 'x', nodes: [] } }));
  const llm = new FakeLlm(['Hello from Acme!', '0', 'I can help with that.', '1']);
  const e = new FlowEngine({ flow, llm });
  assert.deepEqual((await say(e.begin(sig()))).join(''), 'Hello from Acme!');
  assert.match(String(llm.requests[0]?.messages[0]?.content), /You work for Acme\./);
  e.agentSpoke('Hello from Acme!', false);
  assert.deepEqual((await say(e.respond('what are your hours', sig()))).join(''), 'I can help with that.');
  assert.deepEqual(await say(e.respond('this is terrible', sig())), ['Sorry. Bye.', '<agent_hangup>']);
  const e2 = new FlowEngine({ flow, llm: new FakeLlm(['Hi']) });
  await say(e2.begin(sig()));
  assert.deepEqual(await say(e2.respond('question about billing', sig())), ['Billing.'], 'keyword edge needs no LLM call');
  const noLlm = new FlowEngine({ flow });
  await assert.rejects(say(noLlm.begin(sig())), /no LLM is configured/);
});

test('flow: create_ticket renders its templates', async () => {
  const tickets: unknown[] = [];
  const flow: ConversationFlow = {
    start_node_id: 'ask',
    nodes: [
      { id: 'ask', type: 'conversation', instruction: { type: 'static_text', text: 'Problem?' }, extract_variables: [{ name: 'issue', type: 'text' }], edges: [{ id: 'e', destination_node_id: 't', transition_condition: { type: 'always' } }] },
      { id: 't', type: 'create_ticket', ticket: { subject: 'Call: {{issue}}', priority: 'high' }, instruction: { type: 'static_text', text: 'Ticket filed.' }, edges: [{ id: 'e2', destination_node_id: 'end', transition_condition: { type: 'always' } }] },
      { id: 'end', type: 'end' },
    ],
  };
  const e = new FlowEngine({ flow, tools: { createLead: async () => {}, createTicket: async (f) => tickets.push(f) } });
  await say(e.begin(sig()));
  assert.deepEqual(await say(e.respond('my printer is on fire', sig())), ['Ticket filed.', '<agent_hangup>']);
  assert.deepEqual(tickets, [{ subject: 'Call: my printer is on fire', description: 'my printer is on fire', priority: 'high' }]);
});

test('service LLM: begin_message, state transitions as tools, end_call', async () => {
  const llm = new FakeLlm([
    { toolCalls: [{ name: 'transition_to_booking' }] },
    'Which day suits you?',
    { text: 'Great, booked.', toolCalls: [{ name: 'end_call', arguments: { message: 'Goodbye!' } }] },
  ]);
  const e = new LlmEngine({
    llm,
    variables: () => ({ dynamic: { user: 'Sam' } }),
    config: {
      general_prompt: 'You book appointments for {{user}}.',
      begin_message: 'Hi {{user}}!',
      starting_state: 'intro',
      states: [
        { name: 'intro', state_prompt: 'Find out what they need.', edges: [{ destination_state_name: 'booking', description: 'They want to book' }] },
        { name: 'booking', state_prompt: 'Ask for a day.' },
      ],
    },
  });
  assert.deepEqual(await say(e.begin(sig())), ['Hi Sam!']);
  assert.equal((await say(e.respond('i want to book', sig()))).join(''), 'Which day suits you?');
  assert.equal(e.currentState, 'booking');
  assert.match(String(llm.requests[1]?.messages[0]?.content), /Ask for a day\./);
  assert.deepEqual(llm.requests[0]?.tools?.map((t) => t.name), ['transition_to_booking', 'end_call']);
  assert.deepEqual(await say(e.respond('tuesday', sig())), ['Great, ', 'booked.', 'Goodbye!', '<agent_hangup>']);
  assert.equal(e.outcome().reachedEnd, true);
  assert.throws(() => new LlmEngine({ llm, config: { states: [{ name: 'a' }] }, startState: 'zzz' }));
});

test('extraction of spoken values', () => {
  assert.equal(extractDigits('five five five one two three four'), '5551234');
  assert.equal(extractDigits('it is double five oh one two'), '55012');
  assert.equal(extractDigits('call 555-123-4567 please'), '5551234567');
  assert.equal(extractDigits('i want to go for it'), '');
  // A digits variable's bounds (min_digits, max_digits): only a run of that many digits counts.
  assert.equal(extractDigits('five'), '', 'unbounded, a lone digit word is not a value');
  assert.equal(extractDigits('five', { min: 1, max: 1 }), '5');
  assert.equal(extractDigits('i want that one', { min: 1, max: 1 }), '1');
  assert.equal(extractDigits('for', { min: 1, max: 1 }), '', 'a homophone alone is not a digit');
  assert.equal(extractDigits('oh', { min: 1, max: 1 }), '', 'nor a hesitation');
  assert.equal(extractDigits('zero', { min: 1, max: 1 }), '0');
  assert.equal(extractDigits('oh one two', { min: 3, max: 3 }), '012', 'inside a string "oh" is a zero');
  assert.equal(extractDigits('five two', { min: 1, max: 1 }), '', 'two digits where one is expected');
  assert.equal(extractDigits('oh two', { min: 1, max: 1 }), '2', 'a hesitation before the digit');
  assert.equal(extractDigits('room 12, pin 1 2 3 4', { min: 4, max: 4 }), '1234', 'the run of the stated length');
  assert.equal(extractDigits('my pin is five five one two three', { min: 4, max: 4 }), '');
  assert.equal(extractVariable('digits', 'seven', { min: 1, max: 1 }), '7');
  assert.equal(extractVariable('digits', 'seven'), undefined);
  assert.equal(extractNumber('twenty three'), 23);
  assert.equal(extractNumber('one hundred and five people'), 105);
  assert.equal(extractNumber('about 42'), 42);
  assert.equal(extractEmail('it is john dot smith at example dot com'), 'john.smith@example.com');
  assert.equal(extractEmail('mail me at a.b@c.io'), 'a.b@c.io');
  assert.equal(extractName('hi my name is john smith and i need help'), 'John Smith');
  assert.equal(extractName('mary'), 'Mary');
  assert.equal(extractName('i am calling about my bill'), undefined);
  assert.equal(extractYesNo('yeah sure'), 'yes');
  assert.equal(extractYesNo('no thanks'), 'no');
});

test('variables, keywords and equations', () => {
  assert.equal(renderTemplate('Hi {{ name }}, {{x}}!', { name: 'Al' }), 'Hi Al, !');
  assert.equal(renderTemplate('{{x}}', {}, 'keep'), '{{x}}');
  const resolved = resolveVariables({ a: '1', b: '1', c: '1' }, { dynamic: { b: '2', c: '2' }, overrides: { c: '3' } }, { b: 'x' });
  assert.deepEqual({ ...resolved }, { a: '1', b: 'x', c: '3' });
  assert.equal(Object.getPrototypeOf(resolved), null, 'a map without a prototype (test/hostile/variables.test.ts)');
  assert.ok(keywordMatch(['talk to sales'], 'I want to Talk to sales, please'));
  assert.ok(!keywordMatch(['sale'], 'wholesale'));
  const v = { age: '42', city: 'Paris' };
  assert.ok(equationsHold([{ left: '{{age}}', operator: '>=', right: '18' }], '&&', v));
  assert.ok(equationsHold([{ left: 'city', operator: '==', right: 'paris' }, { left: 'x', operator: 'exists' }], '||', v));
  assert.ok(!equationsHold([{ left: 'city', operator: '==', right: 'paris' }, { left: 'x', operator: 'exists' }], '&&', v));
  assert.ok(equationsHold([{ left: '{{city}}', operator: 'contains', right: 'ar' }], '&&', v));
  assert.ok(equationsHold([{ left: '{{zip}}', operator: 'not_exists' }], '&&', v));
});
