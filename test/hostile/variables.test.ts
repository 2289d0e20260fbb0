// The hostile-peer suite, variable names that are built-in object properties: `{{constructor}}`,
// `{{toString}}` and `{{__proto__}}` are variables like any other (unset unless set), in speech,
// in function arguments and in equations; an equation that cannot be judged takes the else path
// and says so, and never ends the call. Values from a function's answer are read from its own
// fields only.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FlowEngine } from '../../src/voice/engines/flow.engine.ts';
import { applyResponseVariables, jsonPath } from '../../src/voice/engines/functions.ts';
import { renderTemplate, resolveVariables } from '../../src/voice/engines/variables.ts';
import type { ConversationFlow, EngineOutput, FunctionCaller } from '../../src/voice/engines/types.ts';

const sig = (): AbortSignal => new AbortController().signal;

async function outputs(it: AsyncIterable<EngineOutput>): Promise<EngineOutput[]> {
  const out: EngineOutput[] = [];
  for await (const o of it) out.push(o);
  return out;
}

const texts = (out: EngineOutput[]) => out.flatMap((o) => (o.type === 'text' ? [o.text] : []));

test('{{constructor}}, {{toString}} and {{__proto__}} render as unset variables, and as their values when set', () => {
  const vars = resolveVariables({ company: 'Acme' }, { dynamic: null, overrides: null });
  assert.equal(renderTemplate('[{{constructor}}|{{toString}}|{{__proto__}}|{{hasOwnProperty}}|{{company}}]', vars), '[||||Acme]');
  assert.equal(renderTemplate('{{constructor}}', vars, 'keep'), '{{constructor}}');
  // As a request body arrives: JSON.parse makes `__proto__` an own field.
  const set = resolveVariables(undefined, { dynamic: JSON.parse('{"constructor":"C","__proto__":"P","toString":"T"}') as Record<string, string>, overrides: null });
  assert.equal(renderTemplate('{{constructor}} {{__proto__}} {{toString}}', set), 'C P T');
  assert.equal(Object.getPrototypeOf(set), null, 'the map has no prototype');
});

test("a function's answer is read from its own fields: `constructor` or `__proto__` in a path is a field it lacks", () => {
  assert.equal(jsonPath({}, 'constructor'), undefined);
  assert.equal(jsonPath({ a: {} }, 'a.__proto__'), undefined);
  assert.equal(jsonPath({ a: { constructor: 'mine' } }, 'a.constructor'), 'mine');
  const into: Record<string, string> = Object.create(null) as Record<string, string>;
  assert.equal(applyResponseVariables({ v: 'constructor', w: 'toString' }, { ok: true, content: '{}', json: {}, durationMs: 1 }, into), null);
  assert.deepEqual({ ...into }, {});
});

test('a flow speaks and sends built-in property names as unset variables; an equation on one takes the else path', async () => {
  const sent: Array<Record<string, unknown>> = [];
  const functions: FunctionCaller = {
    async call(_fn, args) {
      sent.push(args);
      return { ok: true, content: '{}', json: {}, durationMs: 1 };
    },
  };
  const edgeErrors: string[] = [];
  const flow: ConversationFlow = {
    start_node_id: 'greet',
    tools: [{ tool_id: 't', type: 'custom', name: 'probe', description: 'Probe.', url: 'https://example.com/f', parameters: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } } } }],
    nodes: [
      {
        id: 'greet', type: 'conversation', instruction: { type: 'static_text', text: 'Hello {{constructor}}{{toString}}{{__proto__}}there.' },
        edges: [
          { id: 'weird', destination_node_id: 'wrong', transition_condition: { type: 'equation', operator: '||', equations: [{ left: 'constructor', operator: '==', right: 'x' }, { left: 'toString', operator: 'exists' }, { left: '__proto__', operator: 'contains', right: 'Object' }] } },
          { id: 'else', destination_node_id: 'fn', transition_condition: { type: 'always' } },
        ],
      },
      { id: 'wrong', type: 'end', instruction: { type: 'static_text', text: 'Wrong branch.' } },
      { id: 'fn', type: 'function', tool_id: 't', args: { a: '{{constructor}}', b: '{{__proto__}}' }, edges: [{ id: 'on', destination_node_id: 'bye', transition_condition: { type: 'always' } }] },
      { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Bye.' } },
    ],
  };
  const engine = new FlowEngine({ flow, functions, onEdgeError: (_node, edge) => edgeErrors.push(edge) });
  assert.deepEqual(texts(await outputs(engine.begin(sig()))), ['Hello there.']);
  const reply = await outputs(engine.respond('anything', sig()));
  assert.deepEqual(texts(reply), ['Bye.']);
  assert.equal(engine.currentNodeId, 'bye');
  assert.deepEqual(sent, [{ a: '', b: '' }]);
  const invocation = reply.find((o) => o.type === 'tool_call_invocation');
  assert.equal(invocation?.type === 'tool_call_invocation' ? invocation.arguments : '', '{"a":"","b":""}');
  assert.deepEqual(edgeErrors, [], 'the names are unset variables, which judge cleanly');
});

test('an equation that throws while being judged does not hold: the else path, reported, never a failed call', async () => {
  const reported: string[] = [];
  const flow: ConversationFlow = {
    start_node_id: 'greet',
    nodes: [
      {
        id: 'greet', type: 'conversation', instruction: { type: 'static_text', text: 'Hi.' },
        edges: [
          { id: 'boom', destination_node_id: 'wrong', transition_condition: { type: 'equation', operator: '&&', equations: [{ operator: 'exists' } as never] } },
          { id: 'else', destination_node_id: 'bye', transition_condition: { type: 'always' } },
        ],
      },
      { id: 'wrong', type: 'end', instruction: { type: 'static_text', text: 'Wrong.' } },
      { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Bye.' } },
    ],
  };
  // An equation without its left side (the schema refuses one; a definition stored by an older version might hold it).
  const engine = new FlowEngine({ flow, onEdgeError: (node, edge, error) => reported.push(`${node}/${edge}: ${String(error)}`) });
  await outputs(engine.begin(sig()));
  assert.deepEqual(texts(await outputs(engine.respond('hello', sig()))), ['Bye.']);
  assert.equal(reported.length, 1);
  assert.match(reported[0]!, /^greet\/boom: TypeError/);
});
