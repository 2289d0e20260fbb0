// Honest analysis (issue 13, item 8): the embedded post-call analysis does not call a call
// successful when it ended on a fallback path. The rule (docs/voice-pipeline.md, Post-call
// analysis): an end node's `success` mark decides; unmarked, reaching it through a conversation
// node's else edge is not a success; end_call counts only with goal_achieved; a call the engine
// never ended, or that ended on an error, is not a success.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FlowEngine } from '../../src/voice/engines/flow.engine.ts';
import { LlmEngine } from '../../src/voice/engines/llm.engine.ts';
import { analyzeCall, embeddedAnalysis } from '../../src/voice/analysis.ts';
import { FakeLlm } from '../../src/providers/fake/fake.providers.ts';
import { checkFlowGraph } from '../../src/domain/conversation-flow.ts';
import type { ConversationFlow, EngineOutput, FlowNode } from '../../src/voice/engines/types.ts';
import type { Utterance } from '../../src/voice/transcript.ts';

const sig = (): AbortSignal => new AbortController().signal;
async function drain(it: AsyncIterable<EngineOutput>): Promise<void> {
  for await (const _ of it);
}

/** The README's quick-start flow: book on "appointment", else say goodbye. */
function bookingFlow(marks: { book?: boolean; bye?: boolean } = {}): ConversationFlow {
  return {
    start_node_id: 'greet',
    nodes: [
      {
        id: 'greet',
        type: 'conversation',
        instruction: { type: 'static_text', text: 'Hello, how can I help?' },
        edges: [
          { id: 'e_book', destination_node_id: 'book', transition_condition: { type: 'keyword', keywords: ['appointment'] } },
          { id: 'e_else', destination_node_id: 'bye', transition_condition: { type: 'always' } },
        ],
      },
      { id: 'book', type: 'end', instruction: { type: 'static_text', text: 'Your appointment is booked. Goodbye.' }, ...(marks.book === undefined ? {} : { success: marks.book }) },
      { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Goodbye.' }, ...(marks.bye === undefined ? {} : { success: marks.bye }) },
    ],
  };
}

/** Runs a flow over the user's turns and returns the engine's outcome. */
async function run(flow: ConversationFlow, turns: string[]) {
  const engine = new FlowEngine({ flow, tools: { createLead: async () => {}, createTicket: async () => {} } });
  await drain(engine.begin(sig()));
  for (const t of turns) await drain(engine.respond(t, sig()));
  return engine.outcome();
}

const transcript: Utterance[] = [
  { role: 'agent', text: 'Hello, how can I help?', startMs: 0, endMs: 1000 },
  { role: 'user', text: 'i would like an apartment', startMs: 1500, endMs: 3000 },
  { role: 'agent', text: 'Goodbye.', startMs: 3500, endMs: 4000 },
];

test('the issue\'s case: "apartment" takes the else edge to goodbye, and the analysis does not call it a success', async () => {
  const outcome = await run(bookingFlow(), ['i would like an apartment']);
  assert.equal(outcome.reachedEnd, true);
  assert.deepEqual(outcome.ending, { via: 'end_node', nodeId: 'bye', successful: false, marked: false, detail: 'end node "bye" reached through the else edge of "greet"' });
  const analysis = embeddedAnalysis({ transcript, disconnectionReason: 'agent_hangup', reachedEnd: true, ...(outcome.ending ? { ending: outcome.ending } : {}) });
  assert.equal(analysis.call_successful, false);
  assert.match(analysis.call_summary, /ended on a path that is not a success: end node "bye" reached through the else edge of "greet" \(agent_hangup\)/);
});

test('the keyword edge to the booking node is a success', async () => {
  const outcome = await run(bookingFlow(), ['i need an appointment']);
  assert.equal(outcome.ending?.successful, true);
  const analysis = embeddedAnalysis({ transcript, disconnectionReason: 'agent_hangup', reachedEnd: true, ...(outcome.ending ? { ending: outcome.ending } : {}) });
  assert.equal(analysis.call_successful, true);
  assert.match(analysis.call_summary, /completed the conversation \(end node "book"\)/);
});

test("an end node's success mark decides, whichever edge led there", async () => {
  assert.equal((await run(bookingFlow({ bye: true }), ['an apartment'])).ending?.successful, true, 'a goodbye marked a success');
  const failure = await run(bookingFlow({ book: false }), ['an appointment']);
  assert.equal(failure.ending?.successful, false);
  assert.equal(failure.ending?.marked, true);
  assert.equal(failure.ending?.detail, 'end node "book" (marked a failure path)');
});

test('a node whose only edge is always just moves on; a recovery after an else edge counts', async () => {
  const sequence: ConversationFlow = {
    start_node_id: 'ask',
    nodes: [
      { id: 'ask', type: 'conversation', instruction: { type: 'static_text', text: 'Your name?' }, edges: [{ id: 'next', destination_node_id: 'end', transition_condition: { type: 'always' } }] },
      { id: 'end', type: 'end', instruction: { type: 'static_text', text: 'Thanks.' } },
    ],
  };
  assert.equal((await run(sequence, ['ada'])).ending?.successful, true);

  const recovery = bookingFlow();
  const greet = recovery.nodes[0] as FlowNode;
  greet.edges![1] = { id: 'e_else', destination_node_id: 'again', transition_condition: { type: 'always' } };
  recovery.nodes.push({
    id: 'again',
    type: 'conversation',
    instruction: { type: 'static_text', text: 'Sorry, did you want an appointment?' },
    edges: [
      { id: 'e_yes', destination_node_id: 'book', transition_condition: { type: 'keyword', keywords: ['yes'] } },
      { id: 'e_no', destination_node_id: 'bye', transition_condition: { type: 'always' } },
    ],
  });
  assert.equal((await run(recovery, ['an apartment', 'yes'])).ending?.successful, true, 'the last hop was a keyword edge');
  assert.equal((await run(recovery, ['an apartment', 'no'])).ending?.successful, false);
});

test('an else edge through a tool node to the end is still the fallback path', async () => {
  const flow = bookingFlow();
  const greet = flow.nodes[0] as FlowNode;
  greet.edges![1] = { id: 'e_else', destination_node_id: 'ticket', transition_condition: { type: 'always' } };
  flow.nodes.push({ id: 'ticket', type: 'create_ticket', edges: [{ id: 'e_t', destination_node_id: 'bye', transition_condition: { type: 'always' } }] });
  assert.equal((await run(flow, ['something else'])).ending?.successful, false);
});

test("a success is decided on entering the end node: the caller hanging up during its goodbye keeps it", async () => {
  const engine = new FlowEngine({ flow: bookingFlow() });
  await drain(engine.begin(sig()));
  const reply = engine.respond('an appointment', sig())[Symbol.asyncIterator]();
  await reply.next(); // the goodbye is being spoken; the hang-up never comes
  const outcome = engine.outcome();
  assert.equal(outcome.reachedEnd, false);
  assert.equal(embeddedAnalysis({ transcript, disconnectionReason: 'user_hangup', ...(outcome.ending ? { ending: outcome.ending } : {}) }).call_successful, true);
});

test('a call the engine never ended, or that ended on an error, is not a success', () => {
  assert.equal(embeddedAnalysis({ transcript, disconnectionReason: 'user_hangup' }).call_successful, false, 'the user hung up early');
  assert.equal(embeddedAnalysis({ transcript, disconnectionReason: 'inactivity' }).call_successful, false);
  assert.equal(embeddedAnalysis({ transcript, disconnectionReason: 'agent_hangup' }).call_successful, false, 'an agent hang-up alone says nothing of the goal');
  const ending = { via: 'end_node' as const, nodeId: 'book', successful: true, marked: false, detail: 'end node "book"' };
  assert.equal(embeddedAnalysis({ transcript, disconnectionReason: 'error_tts', ending }).call_successful, false);
});

test("the service LLM's end_call is a success only with goal_achieved", async () => {
  const ending = async (args: Record<string, unknown>) => {
    const engine = new LlmEngine({ llm: new FakeLlm([{ toolCalls: [{ name: 'end_call', arguments: args }] }]), config: { general_prompt: 'Book appointments.', begin_message: '' } });
    await drain(engine.respond('bye', sig()));
    return engine.outcome().ending;
  };
  assert.equal((await ending({ message: 'Booked, bye!', goal_achieved: true }))?.successful, true);
  assert.equal((await ending({ message: 'Sorry, bye.', goal_achieved: false }))?.successful, false);
  const unsaid = await ending({ message: 'Bye.' });
  assert.equal(unsaid?.successful, false);
  assert.equal(unsaid?.detail, 'end_call without goal_achieved');
  const tool = new FakeLlm(['Hello']);
  const engine = new LlmEngine({ llm: tool, config: { general_prompt: 'x' } });
  await drain(engine.respond('hi', sig()));
  const endCall = tool.requests[0]?.tools?.find((t) => t.name === 'end_call');
  assert.ok((endCall?.parameters['properties'] as Record<string, unknown>)['goal_achieved'], 'the model is asked');
});

test("the LLM's analysis hears how the call ended, and an author's mark stands over its opinion", async () => {
  const marked = { via: 'end_node' as const, nodeId: 'bye', successful: false, marked: true, detail: 'end node "bye" (marked a failure path)' };
  const llm = new FakeLlm(['{"call_summary":"Done.","call_successful":true,"user_sentiment":"Neutral"}', '{"call_summary":"Done.","call_successful":true,"user_sentiment":"Neutral"}']);
  assert.equal((await analyzeCall({ transcript, disconnectionReason: 'agent_hangup', ending: marked, llm })).call_successful, false);
  assert.match(String(llm.requests[0]?.messages[1]?.content), /How the agent ended the conversation: end node "bye" \(marked a failure path\)/);
  const unmarked = { ...marked, marked: false };
  assert.equal((await analyzeCall({ transcript, disconnectionReason: 'agent_hangup', ending: unmarked, llm })).call_successful, true, 'unmarked: the LLM judges');
});

test('only end nodes carry a success mark', () => {
  const flow = bookingFlow();
  (flow.nodes[0] as FlowNode).success = true;
  assert.equal(checkFlowGraph(flow), 'node "greet" is not an end node: only end nodes are marked with success');
  assert.equal(checkFlowGraph(bookingFlow({ book: true, bye: false })), null);
});
