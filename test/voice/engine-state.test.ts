// Checkpoints of the engines' conversation state (preemptive replies): each engine keeps what a
// turn changes in one object, a checkpoint copies it whole by its copy rules, and a rollback puts
// it back whole. The state is compared whole with what it was at the checkpoint after every field
// has been changed in place, so a field added to the state is covered without touching this test
// beyond its fixture (which does not compile without the new field).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeLlm } from '../../src/providers/fake/fake.providers.ts';
import type { ChatRequest } from '../../src/providers/llm.ts';
import { copyState, type CopyRule, type CopyRules } from '../../src/voice/engines/state.ts';
import {
  FLOW_CONVERSATION_COPY,
  newFlowConversation,
  rollBackFlowConversation,
  saveFlowConversation,
  type FlowConversation,
  type LateResult,
} from '../../src/voice/engines/flow.conversation.ts';
import { LLM_CONVERSATION_COPY, newLlmConversation, saveLlmConversation, type LlmConversation } from '../../src/voice/engines/llm.conversation.ts';
import { FlowEngine } from '../../src/voice/engines/flow.engine.ts';
import { LlmEngine } from '../../src/voice/engines/llm.engine.ts';
import { variableMap } from '../../src/voice/engines/variables.ts';
import type { ConversationFlow, EngineOutput, FlowNode, FunctionCaller, FunctionOutcome, ServiceLlm } from '../../src/voice/engines/types.ts';
import type { CustomFunction } from '../../src/domain/custom-function.ts';

const sig = (): AbortSignal => new AbortController().signal;
const tick = () => new Promise((r) => setImmediate(r));

async function run(it: AsyncIterable<EngineOutput>): Promise<string[]> {
  const out: string[] = [];
  for await (const o of it) {
    if (o.type === 'text') out.push(o.text);
    else if (o.type === 'hangup') out.push('<hangup>');
    else if (o.type === 'tool_call_invocation') out.push(`<invoke ${o.tool_call_id} ${o.name}>`);
    else out.push(`<result ${o.tool_call_id} ${o.content}>`);
  }
  return out;
}

/**
 * A comparable picture of a state taken now: data as plain trees (with each object's prototype,
 * Sets and Maps by their entries), handles (promises, functions) by identity.
 */
function picture(v: unknown, handles = new Map<unknown, number>()): unknown {
  if (typeof v === 'function' || v instanceof Promise) {
    if (!handles.has(v)) handles.set(v, handles.size);
    return `handle ${handles.get(v)}`;
  }
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x) => picture(x, handles));
  if (v instanceof Set) return { set: [...(v as Set<unknown>)].map((x) => picture(x, handles)) };
  if (v instanceof Map) return { map: [...(v as Map<unknown, unknown>)].map(([k, x]) => [picture(k, handles), picture(x, handles)]) };
  return { proto: Object.getPrototypeOf(v) === null ? null : 'Object', fields: Object.entries(v).map(([k, x]) => [k, picture(x, handles)]) };
}

/** Changes every piece of data in `v` in place, as turns do: lists and sets grow, fields change and are added. */
function disturb(v: unknown): void {
  if (v === null || typeof v !== 'object' || v instanceof Promise) return;
  if (Array.isArray(v)) {
    for (const x of v) disturb(x);
    v.push('disturbed');
  } else if (v instanceof Set) v.add('disturbed');
  else if (v instanceof Map) v.set('disturbed', 'disturbed');
  else {
    const o = v as Record<string, unknown>;
    for (const [k, x] of Object.entries(o)) {
      if (typeof x === 'object' && x !== null) disturb(x);
      else o[k] = changed(x);
    }
    o['disturbed'] = 'disturbed';
  }
}

function changed(x: unknown): unknown {
  if (typeof x === 'boolean') return !x;
  if (typeof x === 'number') return x + 1;
  if (typeof x === 'string') return `${x} (changed)`;
  return 'set since';
}

/** The fields of a state that hold handles, as the test knows them: kept by reference (`shared`), or a list of them (`list`). */
type Handles<S> = { [K in keyof S]?: 'shared' | 'list' };

/**
 * Plays the turns after a checkpoint on `live`: every piece of data changed in place (or replaced,
 * when it is not an object); the handles replaced by those in `another`, lists of handles grown by
 * the one in `another`. Which fields hold handles is the test's own knowledge (`handles`), not
 * the engine's copy rules, so a field the rules keep by reference but turns change in place fails.
 */
function turnsAfterCheckpoint<S extends object>(live: S, handles: Handles<S>, another: { [K in keyof S]?: unknown }): void {
  const fields = live as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    const handle = (handles as Record<string, string | undefined>)[key];
    const replacement = (another as Record<string, unknown>)[key];
    if (handle === 'shared') fields[key] = replacement;
    else if (handle === 'list') (fields[key] as unknown[]).push(replacement);
    else if (typeof fields[key] === 'object' && fields[key] !== null) disturb(fields[key]);
    else fields[key] = changed(fields[key]);
  }
}

/** The handles of a flow's conversation: its node (the flow's own), a running request, late results by identity. */
const FLOW_HANDLES: Handles<FlowConversation> = { current: 'shared', pending: 'shared', late: 'list' };
/** The handles of a service LLM's conversation: its state (the definition's own), a running round. */
const LLM_HANDLES: Handles<LlmConversation> = { current: 'shared', pending: 'shared' };

const node = (id: string): FlowNode => ({ id, type: 'conversation', instruction: { type: 'static_text', text: id } });
const outcome = (content: string): FunctionOutcome => ({ ok: true, content, json: JSON.parse(content), durationMs: 3 });

function lateResult(id: string): LateResult {
  return {
    pending: { node: node(`fn_${id}`), toolCallId: `tool_call_${id}`, outcome: Promise.resolve(outcome('{}')) },
    outcome: outcome(`{"id":"${id}"}`),
    record: { type: 'tool_call_result', tool_call_id: `tool_call_${id}`, content: `{"id":"${id}"}` },
  };
}

/** A flow conversation with every field set, well into a call. */
function flowConversation(): FlowConversation {
  const extracted = variableMap();
  Object.assign(extracted, { name: 'Ada', phone: '5551234' });
  // Hostile names stay plain variables through a copy (issue 21).
  Object.defineProperty(extracted, '__proto__', { value: 'x', enumerable: true, writable: true, configurable: true });
  const conversation: FlowConversation = {
    current: node('ask'),
    extracted,
    names: new Set(['Ada']),
    history: [
      { role: 'user', content: 'my name is ada' },
      { role: 'assistant', content: 'Thanks Ada.' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', name: 'lookup', arguments: '{"q":1}' }] },
    ],
    reachedEnd: false,
    ending: { via: 'end_node', nodeId: 'bye', successful: true, detail: 'end node "bye"', marked: false },
    elseFrom: 'greet',
    toolCallSeq: 2,
    pending: { node: node('fn'), toolCallId: 'tool_call_2', outcome: Promise.resolve(outcome('{}')) },
    late: [lateResult('1')],
    functionSent: true,
    path: ['greet', 'ask'],
    transfer: { nodeId: 'desk', toolCallId: 'tool_call_3', failure: 'busy' },
  };
  return conversation;
}

function llmConversation(): LlmConversation {
  return {
    current: { name: 'booking', state_prompt: 'Book.', edges: [{ destination_state_name: 'done' }] },
    history: [
      { role: 'user', content: 'book me in' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', name: 'transition_to_booking', arguments: '{}' }] },
      { role: 'tool', tool_call_id: 'c1', content: 'now in state booking' },
    ],
    reachedEnd: false,
    ending: { via: 'end_call', successful: false, marked: false, detail: 'end_call without goal_achieved' },
    pending: { calls: [{ id: 'c2', name: 'book', arguments: '{}' }], results: Promise.resolve(new Map()), records: Promise.resolve([]) },
  };
}

test('the copy rules cover every field the engines start with, and keep exactly the handles by reference', () => {
  const keys = (o: object) => Object.keys(o).sort();
  const byReference = (rules: Readonly<Record<string, CopyRule>>) => Object.fromEntries(Object.entries(rules).filter(([, r]) => r !== 'value'));
  assert.deepEqual(byReference(FLOW_CONVERSATION_COPY), FLOW_HANDLES);
  assert.deepEqual(byReference(LLM_CONVERSATION_COPY), LLM_HANDLES);
  assert.deepEqual(keys(newFlowConversation(node('start'))), keys(FLOW_CONVERSATION_COPY));
  assert.deepEqual(keys(flowConversation()), keys(FLOW_CONVERSATION_COPY));
  assert.deepEqual(keys(newLlmConversation(undefined)), keys(LLM_CONVERSATION_COPY));
  assert.deepEqual(keys(llmConversation()), keys(LLM_CONVERSATION_COPY));
});

test('flow: a rollback puts back the whole conversation as it was at the checkpoint, whatever the turns after it changed', () => {
  const live = flowConversation();
  const atCheckpoint = picture(live);
  const handles = { current: live.current, pending: live.pending, late: [...live.late] };
  const saved = saveFlowConversation(live);
  const arrived = lateResult('2');
  turnsAfterCheckpoint(live, FLOW_HANDLES, { current: node('bye'), pending: undefined, late: arrived });
  assert.notDeepEqual(picture(live), atCheckpoint, 'the turns changed every field');

  const back = rollBackFlowConversation(saved, live);
  // A function result that came in after the checkpoint stays (its variables are stored again by the engine).
  assert.deepEqual(back.arrived, [arrived]);
  assert.equal(back.conversation.late.pop(), arrived);
  assert.deepEqual(picture(back.conversation), atCheckpoint);
  assert.equal(back.conversation.current, handles.current, 'the node is the flow\'s own');
  assert.equal(back.conversation.pending, handles.pending, 'a pending request is the same request');
  assert.deepEqual(back.conversation.late.map((r, i) => r === handles.late[i]), [true]);
  assert.equal(Object.getPrototypeOf(back.conversation.extracted), null, 'variables stay prototype-free');
  assert.equal(back.conversation.extracted['__proto__'], 'x');
});

test('service LLM: a rollback puts back the whole conversation as it was at the checkpoint', () => {
  const live = llmConversation();
  const atCheckpoint = picture(live);
  const handles = { current: live.current, pending: live.pending };
  const saved = saveLlmConversation(live);
  turnsAfterCheckpoint(live, LLM_HANDLES, { current: { name: 'done' }, pending: undefined });
  assert.notDeepEqual(picture(live), atCheckpoint);
  const back = saveLlmConversation(saved);
  assert.deepEqual(picture(back), atCheckpoint);
  assert.equal(back.current, handles.current);
  assert.equal(back.pending, handles.pending);
});

test('a copy refuses what it cannot copy safely: a field without a rule, a handle copied as a value', () => {
  const rules: CopyRules<{ a: number }> = { a: 'value' };
  assert.throws(() => copyState({ a: 1, b: 2 } as { a: number }, rules), /state field b has no copy rule/);
  assert.throws(() => copyState({ a: Promise.resolve(1) }, { a: 'value' }), /state field a holds a handle \(\[object Promise\]\)/);
  assert.throws(() => copyState({ a: [{ f: () => 1 }] }, { a: 'value' }), /state field a\[0\]\.f holds a function/);
  assert.throws(() => copyState({ a: new Date() }, { a: 'value' }), /holds a handle/);
});

/** A flow that extracts a name, talks through an LLM in a prompt node, notifies a backend without waiting, and ends on "bye". */
function talkFlow(): ConversationFlow {
  return {
    start_node_id: 'ask',
    tools: [{ tool_id: 'n', type: 'custom', name: 'notify', url: 'http://backend.example/n', response_variables: { ticket: 'id' } }],
    nodes: [
      {
        id: 'ask',
        type: 'conversation',
        instruction: { type: 'static_text', text: 'Your name?' },
        extract_variables: [{ name: 'name', type: 'name' }],
        edges: [
          { id: 'named', destination_node_id: 'notify', transition_condition: { type: 'equation', equations: [{ left: 'name', operator: 'exists' }], operator: '&&' } },
          { id: 'else', destination_node_id: 'help', transition_condition: { type: 'always' } },
        ],
      },
      { id: 'notify', type: 'function', tool_id: 'n', wait_for_result: false, edges: [{ id: 'on', destination_node_id: 'help', transition_condition: { type: 'always' } }] },
      {
        id: 'help',
        type: 'conversation',
        instruction: { type: 'prompt', text: 'Help {{name}}.' },
        edges: [{ id: 'bye', destination_node_id: 'bye', transition_condition: { type: 'keyword', keywords: ['bye'] } }],
      },
      { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Goodbye {{name}}, ticket {{ticket}}.' } },
    ],
  };
}

class ManualCaller implements FunctionCaller {
  readonly answers: Array<(o: FunctionOutcome) => void> = [];
  call(_fn: CustomFunction, _args: Record<string, unknown>): Promise<FunctionOutcome> {
    return new Promise((resolve) => this.answers.push(resolve));
  }
}

/** What the engine shows of its conversation. */
function observed(e: FlowEngine) {
  return { outcome: e.outcome(), variables: e.variables(), expected: e.expectedPhrases(), node: e.currentNodeId };
}

test('flow engine: a checkpoint, turns thrown away, a rollback: the engine goes on as one that never took those turns', async () => {
  const [caller, twinCaller] = [new ManualCaller(), new ManualCaller()];
  const real = ['How can I help, Bob?', 'We open at nine.'];
  const [llm, twinLlm] = [new FakeLlm(['How can I help, Ada?', ...real]), new FakeLlm(real)];
  const engine = new FlowEngine({ flow: talkFlow(), llm, functions: caller });
  const twin = new FlowEngine({ flow: talkFlow(), llm: twinLlm, functions: twinCaller });
  for (const e of [engine, twin]) {
    assert.deepEqual(await run(e.begin(sig())), ['Your name?']);
    e.agentSpoke('Your name?', false);
  }

  const atCheckpoint = observed(engine);
  const restore = engine.checkpoint();
  // Turns thrown away: a name extracted, a function called, the LLM heard, the end reached.
  assert.deepEqual(await run(engine.respond('my name is ada', sig())), ['<invoke tool_call_1 notify>', 'How ', 'can ', 'I ', 'help, ', 'Ada?']);
  engine.agentSpoke('How can I help, Ada?', false);
  assert.deepEqual(await run(engine.respond('bye then', sig())), ['Goodbye Ada, ticket .', '<hangup>']);
  assert.deepEqual(engine.outcome().names, ['Ada']);
  restore();
  assert.deepEqual(observed(engine), atCheckpoint);
  assert.deepEqual(observed(engine), observed(twin));

  // The same turns on both from here: the same outputs (function call ids included), the same requests to the model.
  const turns: Array<(e: FlowEngine) => Promise<string[]>> = [
    (e) => run(e.respond('my name is bob', sig())),
    async (e) => {
      const c = e === engine ? caller : twinCaller;
      c.answers.at(-1)!({ ok: true, content: '{"id":"T-1"}', json: { id: 'T-1' }, durationMs: 4 });
      await tick();
      return run(e.respond('when do you open', sig()));
    },
    (e) => run(e.respond('bye', sig())),
  ];
  for (const turn of turns) {
    const [ours, theirs] = [await turn(engine), await turn(twin)];
    assert.deepEqual(ours, theirs);
    assert.deepEqual(llm.requests.at(-1)?.messages, twinLlm.requests.at(-1)?.messages, "the model sees what the twin's sees");
    assert.deepEqual(observed(engine), observed(twin));
  }
  assert.deepEqual(engine.outcome().names, ['Bob']);
  assert.equal(engine.outcome().reachedEnd, true);
});

test('flow engine: a result of a function not waited for that comes in during a turn thrown away stays, and goes out once', async () => {
  const caller = new ManualCaller();
  const engine = new FlowEngine({ flow: talkFlow(), llm: new FakeLlm(['Hi Ada.', 'Sure.']), functions: caller });
  await run(engine.begin(sig()));
  await run(engine.respond('my name is ada', sig()));
  const restore = engine.checkpoint();
  const thrownAway = run(engine.respond('what else', sig()));
  caller.answers[0]!({ ok: true, content: '{"id":"T-7"}', json: { id: 'T-7' }, durationMs: 4 });
  await thrownAway;
  await tick();
  restore();
  assert.equal(engine.variables()['ticket'], 'T-7', 'its variables stay stored');
  assert.deepEqual(await run(engine.respond('bye', sig())), ['<result tool_call_1 {"id":"T-7"}>', 'Goodbye Ada, ticket T-7.', '<hangup>']);
});

test('service LLM engine: a turn thrown away (a transition and end_call) leaves no trace after the rollback', async () => {
  const config: ServiceLlm = {
    general_prompt: 'You book tables.',
    starting_state: 'greet',
    states: [
      { name: 'greet', state_prompt: 'Greet.', edges: [{ destination_state_name: 'book' }] },
      { name: 'book', state_prompt: 'Book.' },
    ],
  };
  const script = ['Hello.', { toolCalls: [{ name: 'transition_to_book' }] }, 'For when?'];
  const llm = new FakeLlm([...script, { toolCalls: [{ name: 'end_call', arguments: { message: 'Bye.', goal_achieved: true } }] }, 'Tonight works.']);
  const twinLlm = new FakeLlm([...script, 'Tonight works.']);
  const engine = new LlmEngine({ config, llm });
  const twin = new LlmEngine({ config, llm: twinLlm });
  for (const e of [engine, twin]) {
    await run(e.begin(sig()));
    e.agentSpoke('Hello.', false);
    assert.deepEqual(await run(e.respond('a table please', sig())), ['For ', 'when?']);
    e.agentSpoke('For when?', false);
  }
  const atCheckpoint = { outcome: engine.outcome(), state: engine.currentState };
  const restore = engine.checkpoint();
  assert.deepEqual(await run(engine.respond('never mind', sig())), ['Bye.', '<hangup>']);
  restore();
  assert.deepEqual({ outcome: engine.outcome(), state: engine.currentState }, atCheckpoint);
  assert.deepEqual(await run(engine.respond('tonight', sig())), await run(twin.respond('tonight', sig())));
  const last = (requests: ChatRequest[]) => requests.at(-1)?.messages;
  assert.deepEqual(last(llm.requests), last(twinLlm.requests));
});
