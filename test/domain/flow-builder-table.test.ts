/**
 * The dashboard's flow builder (web/dashboard/flow-nodes.ts, flow-types.ts) against the API's
 * flow schema: it offers every node type the API takes, checks a phone node's number and keys with
 * the API's own patterns, and a node or variable retyped in the builder is one the API accepts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TRANSFER_DESTINATION_PATTERN } from '../../src/domain/custom-function.ts';
import { NODE_DIGITS_PATTERN, NODE_TYPES, checkFlowGraph } from '../../src/domain/conversation-flow.ts';
import { BUILDER_NODE_TYPES, phoneProblem, retype, retypeVariable, withBound } from '../../web/dashboard/flow-nodes.ts';
import * as builderTypes from '../../web/dashboard/flow-types.ts';
import type { Flow, Node } from '../../web/dashboard/flow-types.ts';

describe("the flow builder's node types and phone fields", () => {
  test('offers every node type of the API', () => {
    assert.deepEqual([...BUILDER_NODE_TYPES].sort(), [...NODE_TYPES].sort());
  });

  test("checks numbers and keys with the API's patterns", () => {
    assert.equal(builderTypes.TRANSFER_NUMBER_PATTERN, TRANSFER_DESTINATION_PATTERN);
    assert.equal(builderTypes.NODE_DIGITS_PATTERN, NODE_DIGITS_PATTERN);
    const transfer = (number: string): Node => ({ id: 'desk', type: 'transfer_call', transfer_destination: { type: 'predefined', number } });
    assert.equal(phoneProblem(transfer('+14155550100')), null);
    assert.equal(phoneProblem(transfer('sip:desk@pbx.example.com')), null);
    assert.match(phoneProblem(transfer('555-0100')) ?? '', /E\.164/);
    assert.equal(phoneProblem({ id: 'menu', type: 'press_digit', digits: '1,#' }), null);
    assert.match(phoneProblem({ id: 'menu', type: 'press_digit', digits: '' }) ?? '', /keys/);
  });

  test('a node retyped to a phone node and back passes the API graph check once its fields are filled', () => {
    const greet: Node = { id: 'greet', type: 'conversation', instruction: { type: 'static_text', text: 'Hi.' }, edges: [{ id: 'e1', destination_node_id: 'bye', transition_condition: { type: 'always' } }] };
    const bye: Node = { id: 'bye', type: 'end' };
    const check = (node: Node) => checkFlowGraph({ start_node_id: 'greet', nodes: [node, bye] } as Flow as Parameters<typeof checkFlowGraph>[0]);
    const asTransfer = retype(greet, 'transfer_call');
    assert.equal(asTransfer.edges, undefined, 'a transfer leaves the call');
    assert.equal(check({ ...asTransfer, transfer_destination: { type: 'predefined', number: '+14155550100' }, edge: { id: 'f', destination_node_id: 'bye', transition_condition: { type: 'always' } } }), null);
    const asPress = retype({ ...asTransfer, edge: { id: 'f', destination_node_id: 'bye', transition_condition: { type: 'always' } } }, 'press_digit');
    assert.equal(asPress.instruction, undefined, 'a press_digit node says nothing');
    assert.equal(asPress.transfer_destination, undefined);
    assert.equal(check({ ...asPress, digits: '1' }), null);
    const back = retype(asPress, 'conversation');
    assert.equal(back.edge, undefined, 'only phone nodes have a failure edge');
    assert.equal(back.digits, undefined);
    assert.equal(check(back), null);
  });

  test("a digits variable's bounds pass the API graph check, and go when the variable is retyped", () => {
    const bye: Node = { id: 'bye', type: 'end' };
    const check = (variable: NonNullable<Node['extract_variables']>[number]) =>
      checkFlowGraph({ start_node_id: 'pin', nodes: [{ id: 'pin', type: 'conversation', extract_variables: [variable] }, bye] } as Flow as Parameters<typeof checkFlowGraph>[0]);
    const pin = withBound(withBound({ name: 'pin', type: 'digits' }, 'min_digits', '4'), 'max_digits', '6');
    assert.deepEqual(pin, { name: 'pin', type: 'digits', min_digits: 4, max_digits: 6 });
    assert.equal(check(pin), null);
    assert.match(check({ ...pin, type: 'text' }) ?? '', /only digits variables have min_digits/);
    assert.equal(check(retypeVariable(pin, 'text')), null);
    assert.deepEqual(withBound(pin, 'max_digits', ''), { name: 'pin', type: 'digits', min_digits: 4 });
  });
});
