// The engines' custom functions in lock-step, with a scripted function caller: a flow's
// `wait_for_result: false`, a turn cut short while a request runs (the request is not repeated and
// its result is settled first on the next turn), several calls in one model round.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeLlm } from '../../src/providers/fake/fake.providers.ts';
import { FlowEngine } from '../../src/voice/engines/flow.engine.ts';
import { LlmEngine } from '../../src/voice/engines/llm.engine.ts';
import type { ConversationFlow, EngineOutput, FunctionCaller, FunctionOutcome } from '../../src/voice/engines/types.ts';
import type { CustomFunction } from '../../src/domain/custom-function.ts';

/** A caller whose answers the test releases by hand. */
class ManualCaller implements FunctionCaller {
  readonly calls: Array<{ name: string; args: Record<string, unknown>; answer: (o: Partial<FunctionOutcome>) => void }> = [];
  call(fn: CustomFunction, args: Record<string, unknown>): Promise<FunctionOutcome> {
    return new Promise((resolve) => {
      this.calls.push({ name: fn.name, args, answer: (o) => resolve({ ok: true, content: '{}', durationMs: 5, ...o }) });
    });
  }
}

function show(o: EngineOutput): string {
  if (o.type === 'text') return o.text;
  if (o.type === 'hangup') return '<hangup>';
  if (o.type === 'tool_call_invocation') return `<invoke ${o.name} ${o.arguments}>`;
  return `<result ${o.content}>`;
}

/** Collects outputs until the iterator ends (or `stop` says to abort after an output). */
async function run(it: AsyncIterable<EngineOutput>): Promise<string[]> {
  const out: string[] = [];
  for await (const o of it) out.push(show(o));
  return out;
}

const tick = () => new Promise((r) => setImmediate(r));

const fn = (name: string, extra: Partial<CustomFunction> = {}): CustomFunction => ({ type: 'custom', name, url: 'http://backend.example/x', ...extra });

test('flow: wait_for_result false moves on at once; the result is recorded on the next output and sets its variables', async () => {
  const caller = new ManualCaller();
  const flow: ConversationFlow = {
    start_node_id: 'notify',
    tools: [{ tool_id: 'n', ...fn('notify', { response_variables: { ticket: 'id' } }) }],
    nodes: [
      { id: 'notify', type: 'function', tool_id: 'n', wait_for_result: false, args: { n: '1' }, edges: [{ id: 'e', destination_node_id: 'ask', transition_condition: { type: 'always' } }] },
      { id: 'ask', type: 'conversation', instruction: { type: 'static_text', text: 'Anything else?' }, edges: [{ id: 'f', destination_node_id: 'bye', transition_condition: { type: 'keyword', keywords: ['no'] } }] },
      { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Ticket {{ticket}}.' } },
    ],
  };
  const engine = new FlowEngine({ flow, functions: caller });
  assert.deepEqual(await run(engine.begin(new AbortController().signal)), ['<invoke notify {"n":"1"}>', 'Anything else?']);
  caller.calls[0]!.answer({ content: '{"id":"T-9"}', json: { id: 'T-9' } });
  await tick();
  assert.deepEqual(await run(engine.respond('no', new AbortController().signal)), ['<result {"id":"T-9"}>', 'Ticket T-9.', '<hangup>']);
});

test('flow: a turn cut short while the request runs does not send it again; the next turn settles it and moves on', async () => {
  const caller = new ManualCaller();
  const flow: ConversationFlow = {
    start_node_id: 'lookup',
    tools: [{ tool_id: 't', ...fn('check', { response_variables: { state: 'state' } }) }],
    nodes: [
      {
        id: 'lookup', type: 'function', tool_id: 't', speak_during_execution: true, instruction: { type: 'static_text', text: 'One moment.' },
        edges: [{ id: 'ok', destination_node_id: 'done', transition_condition: { type: 'equation', operator: '&&', equations: [{ left: 'tool_call_status', operator: '==', right: 'success' }] } }],
      },
      { id: 'done', type: 'end', instruction: { type: 'static_text', text: 'It is {{state}}.' } },
    ],
  };
  const engine = new FlowEngine({ flow, functions: caller });
  const turn = new AbortController();
  const seen: string[] = [];
  const first = (async () => {
    for await (const o of engine.begin(turn.signal)) seen.push(show(o));
  })();
  while (caller.calls.length === 0) await tick();
  turn.abort(new Error('barge-in'));
  await assert.rejects(first);
  assert.deepEqual(seen, ['One moment.', '<invoke check {}>']);
  const second = run(engine.respond('hello?', new AbortController().signal));
  await tick();
  caller.calls[0]!.answer({ content: '{"state":"open"}', json: { state: 'open' } });
  assert.deepEqual(await second, ['<result {"state":"open"}>', 'It is open.', '<hangup>']);
  assert.equal(caller.calls.length, 1);
});

test('service LLM: a round of several calls runs them at once; a barge-in keeps the requests and the next turn gives the model their results first', async () => {
  const caller = new ManualCaller();
  const llm = new FakeLlm([
    { toolCalls: [{ name: 'a', arguments: { x: 1 } }, { name: 'b', arguments: {} }] },
    'Both done.',
  ]);
  const engine = new LlmEngine({ llm, functions: caller, config: { general_tools: [fn('a'), fn('b', { speak_during_execution: true, execution_message_description: 'Working on it.' })] } });
  const turn = new AbortController();
  const seen: string[] = [];
  const first = (async () => {
    for await (const o of engine.respond('do both', turn.signal)) seen.push(show(o));
  })();
  while (caller.calls.length < 2) await tick();
  assert.deepEqual(caller.calls.map((c) => c.name), ['a', 'b'], 'both requests are out before either answers');
  turn.abort(new Error('barge-in'));
  await assert.rejects(first);
  assert.deepEqual(seen, ['Working on it.', '<invoke a {"x":1}>', '<invoke b {}>']);

  const second = run(engine.respond('and?', new AbortController().signal));
  caller.calls[1]!.answer({ content: 'B' });
  caller.calls[0]!.answer({ content: 'A' });
  assert.deepEqual(await second, ['<result A>', '<result B>', 'Both ', 'done.']);
  // The model's history: its calls, their results, then the user's new words.
  const messages = llm.requests[1]!.messages.slice(1).map((m) => (m.role === 'tool' ? `tool ${m.tool_call_id} ${m.content}` : m.role === 'assistant' ? `assistant ${m.tool_calls?.map((c) => c.name).join(',') ?? m.content}` : `${m.role} ${m.content}`));
  assert.deepEqual(messages, ['user do both', 'assistant a,b', 'tool call_1 A', 'tool call_2 B', 'user and?']);
  assert.equal(caller.calls.length, 2);
});

test('service LLM: speak_after_execution false on every function of the round: the model is not asked again', async () => {
  const caller = new ManualCaller();
  const llm = new FakeLlm([{ toolCalls: [{ name: 'log_it' }] }]);
  const engine = new LlmEngine({ llm, functions: caller, config: { general_tools: [fn('log_it', { speak_after_execution: false })] } });
  const out = run(engine.respond('note this', new AbortController().signal));
  while (caller.calls.length === 0) await tick();
  caller.calls[0]!.answer({ content: 'ok' });
  assert.deepEqual(await out, ['<invoke log_it {}>', '<result ok>']);
  assert.equal(llm.requests.length, 1);
});

test("service LLM: Retell's end_call tool in general_tools names and describes the hang-up tool", async () => {
  const llm = new FakeLlm([{ text: 'Goodbye.', toolCalls: [{ name: 'hang_up' }] }]);
  const engine = new LlmEngine({ llm, config: { general_tools: [{ type: 'end_call', name: 'hang_up', description: 'Hang up when the user is done.' }, fn('lookup')] } });
  assert.deepEqual(await run(engine.respond('bye', new AbortController().signal)), ['Goodbye.', '<hangup>']);
  const tools = llm.requests[0]!.tools!.map((t) => `${t.name}: ${t.description ?? ''}`);
  assert.deepEqual(tools, ['hang_up: Hang up when the user is done.', 'lookup: ']);
  assert.equal(engine.outcome().reachedEnd, true);
});

test("service LLM: tool_call_strict_mode offers the custom functions with strict, and only them", async () => {
  for (const strictMode of [true, false]) {
    const llm = new FakeLlm([{ text: 'Sure.' }]);
    const engine = new LlmEngine({ llm, config: { tool_call_strict_mode: strictMode, general_tools: [fn('lookup', { parameters: { type: 'object', properties: {}, additionalProperties: false } })] } });
    await run(engine.respond('hi', new AbortController().signal));
    const strict = Object.fromEntries(llm.requests[0]!.tools!.map((t) => [t.name, t.strict === true]));
    assert.deepEqual(strict, { end_call: false, lookup: strictMode });
  }
});

test('service LLM: end_call ends the call the same way in a round with functions and without: goodbye, the ending recorded once', async () => {
  const endCalls = [
    { name: 'end_call', arguments: { message: ' Bye now. ', goal_achieved: true } },
    { name: 'end_call', arguments: { message: 'Second goodbye.', goal_achieved: false } },
  ];
  const runs: Array<{ out: string[]; engine: LlmEngine; llm: FakeLlm }> = [];
  for (const withFunction of [false, true]) {
    const caller = new ManualCaller();
    const calls = [...(withFunction ? [{ name: 'log_it' }] : []), endCalls[0]!, { name: 'transition_to_done' }, endCalls[1]!];
    const llm = new FakeLlm([{ toolCalls: calls }]);
    const engine = new LlmEngine({
      llm,
      functions: caller,
      config: { general_tools: [fn('log_it')], starting_state: 'talk', states: [{ name: 'talk', edges: [{ destination_state_name: 'done' }] }, { name: 'done' }] },
    });
    const out = run(engine.respond('that is all', new AbortController().signal));
    if (withFunction) {
      while (caller.calls.length === 0) await tick();
      caller.calls[0]!.answer({ content: 'logged' });
    }
    runs.push({ out: await out, engine, llm });
  }
  const [plain, functions] = runs as [(typeof runs)[0], (typeof runs)[0]];
  assert.deepEqual(plain.out, ['Bye now.', '<hangup>']);
  assert.deepEqual(functions.out, ['<invoke log_it {}>', '<result logged>', 'Bye now.', '<hangup>']);
  for (const { engine } of runs) {
    // The first end_call decides; the transition in the same round still moved the conversation.
    assert.deepEqual(engine.outcome().ending, { via: 'end_call', successful: true, marked: false, detail: 'end_call with goal_achieved in state "talk"' });
    assert.equal(engine.outcome().reachedEnd, true);
    assert.equal(engine.outcome().position, 'done');
    assert.deepEqual(await run(engine.respond('hello?', new AbortController().signal)), [], 'nothing after the end');
  }
  assert.equal(plain.llm.requests.length, 1);
  assert.equal(functions.llm.requests.length, 1);
});
