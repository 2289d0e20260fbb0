/** The builder's node types and the rules of its phone nodes (no DOM: test/domain/flow-builder-table.test.ts holds them to the API's schema). */
import { NODE_DIGITS_PATTERN, type Node, TRANSFER_NUMBER_PATTERN, type Variable } from './flow-types.ts';

/** The node types the builder offers: every one the API takes. */
export const BUILDER_NODE_TYPES = ['conversation', 'end', 'function', 'knowledge', 'create_lead', 'create_ticket', 'transfer_call', 'press_digit'];
/** The nodes whose action can fail: they have a failure `edge` (docs/telephony.md). */
export const PHONE_TYPES = ['transfer_call', 'press_digit'];

/** What is wrong with a phone node's own fields before the server is asked, or null. */
export function phoneProblem(node: Node): string | null {
  if (node.type === 'transfer_call' && !new RegExp(TRANSFER_NUMBER_PATTERN).test(node.transfer_destination?.number ?? '')) {
    return 'The transfer number must be an E.164 number (+14155550100) or a SIP URI (sip:desk@pbx.example.com).';
  }
  if (node.type === 'press_digit' && !new RegExp(NODE_DIGITS_PATTERN).test(node.digits ?? '')) {
    return 'The keys must be 1 to 32 of 0-9, * and #; a comma pauses 500 ms.';
  }
  return null;
}

/**
 * The node as another type: the fields only the old type has go, the ones the new type needs come
 * (a transfer leaves the call, so it has no `edges`; a press_digit node says nothing).
 */
export function retype(node: Node, type: string): Node {
  const next: Node = { ...node, type };
  if (type !== 'transfer_call') {
    delete next.transfer_destination;
    delete next.transfer_option;
  }
  if (type !== 'press_digit') delete next.digits;
  if (!PHONE_TYPES.includes(type)) delete next.edge;
  if (type === 'end' || type === 'transfer_call') delete next.edges;
  if (type === 'transfer_call') next.transfer_destination ??= { type: 'predefined', number: '' };
  if (type === 'press_digit') {
    delete next.instruction;
    next.digits ??= '';
  }
  return next;
}

/** A variable given another type: only a digits variable keeps its digit bounds. */
export function retypeVariable(variable: Variable, type: string): Variable {
  const next: Variable = { ...variable, type };
  if (type !== 'digits') {
    delete next.min_digits;
    delete next.max_digits;
  }
  return next;
}

/** A digits variable with one bound set from its input ('' clears it; the API checks the rest). */
export function withBound(variable: Variable, bound: 'min_digits' | 'max_digits', input: string): Variable {
  const next: Variable = { ...variable };
  const n = Number(input);
  if (input.trim() === '' || !Number.isFinite(n)) delete next[bound];
  else next[bound] = Math.trunc(n);
  return next;
}
