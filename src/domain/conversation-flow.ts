import { Type, type Static } from '@sinclair/typebox';
import { FlowTool, TransferDestination, TransferOption, checkFunctions } from './custom-function.ts';
import { KbConfig, KnowledgeBaseIds } from './knowledge-base.ts';
import { Name, Strict, StringMap, Text } from './schema-kit.ts';

/** Ids of nodes and edges: short, printable. */
const GraphId = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_.:-]+$' });
const Template = Type.String({ maxLength: 4096 });

export const PromptCondition = Strict({ type: Type.Literal('prompt'), prompt: Text(4096) });
export const KeywordCondition = Strict({
  type: Type.Literal('keyword'),
  keywords: Type.Array(Name(128), { minItems: 1, maxItems: 100 }),
});
export const EQUATION_OPERATORS = ['==', '!=', '>', '>=', '<', '<=', 'contains', 'not_contains', 'exists', 'not_exists'] as const;
export const Equation = Strict({
  left: Template,
  operator: Type.Union(EQUATION_OPERATORS.map((op) => Type.Literal(op))),
  right: Type.Optional(Template),
});
export const EquationCondition = Strict({
  type: Type.Literal('equation'),
  equations: Type.Array(Equation, { minItems: 1, maxItems: 50 }),
  operator: Type.Union([Type.Literal('&&'), Type.Literal('||')]),
});
/** The else edge: taken when no other edge of the node matched. */
export const AlwaysCondition = Strict({ type: Type.Literal('always') });
export const TransitionCondition = Type.Union([PromptCondition, KeywordCondition, EquationCondition, AlwaysCondition]);

export const FlowEdge = Strict({
  id: GraphId,
  destination_node_id: GraphId,
  transition_condition: TransitionCondition,
});

export const Instruction = Strict({
  type: Type.Union([Type.Literal('static_text'), Type.Literal('prompt')]),
  text: Text(16_384),
});

/** The most digits a digits variable's bounds may state (min_digits, max_digits). */
export const MAX_VALUE_DIGITS = 50;
export const VARIABLE_TYPES = ['text', 'digits', 'number', 'email', 'name', 'yes_no'] as const;
export const ExtractVariable = Strict({
  name: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }),
  type: Type.Union(VARIABLE_TYPES.map((t) => Type.Literal(t))),
  description: Type.Optional(Text(1024)),
  /**
   * digits only: the fewest and the most digits its value has (1 to 50), as an IVR's "say your
   * 4-digit PIN" states it. A value of another length is not extracted; the recogniser expects
   * that many digits (directed recognition) and a keyed turn ends at the most.
   */
  min_digits: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_VALUE_DIGITS })),
  max_digits: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_VALUE_DIGITS })),
});

export const NODE_TYPES = ['conversation', 'end', 'create_lead', 'create_ticket', 'function', 'knowledge', 'transfer_call', 'press_digit'] as const;
/** The keys a press_digit node sends: 0-9, * and #, with `,` for a pause (PRESS_DIGIT_PAUSE_MS). */
export const NODE_DIGITS_PATTERN = '^[0-9*#,]{1,32}$';
/** How long each `,` of a press_digit node's digits waits, ms (a phone's dialling pause). */
export const PRESS_DIGIT_PAUSE_MS = 500;
export const FlowNode = Strict({
  id: GraphId,
  name: Type.Optional(Name()),
  type: Type.Union(NODE_TYPES.map((t) => Type.Literal(t))),
  instruction: Type.Optional(Instruction),
  edges: Type.Optional(Type.Array(FlowEdge, { maxItems: 100 })),
  /** Variables to capture from the user's words while in this node. */
  extract_variables: Type.Optional(Type.Array(ExtractVariable, { maxItems: 50 })),
  /** create_lead: templates for the lead's fields (default name "{{name}}", phone "{{phone}}"). */
  lead: Type.Optional(
    Strict({
      name: Type.Optional(Template),
      phone: Type.Optional(Template),
      email: Type.Optional(Template),
      notes: Type.Optional(Template),
    }),
  ),
  /** function: the flow tool to call (`tools[].tool_id`). */
  tool_id: Type.Optional(Name(128)),
  /** function: the arguments, each a template rendered from the call's dynamic variables. */
  args: Type.Optional(Type.Record(Type.String({ minLength: 1, maxLength: 128 }), Template, { maxProperties: 50 })),
  /** function: wait for the answer before taking an edge (default true); false moves on at once. */
  wait_for_result: Type.Optional(Type.Boolean()),
  /** function: speak the node's instruction while the request runs (default: the tool's setting). */
  speak_during_execution: Type.Optional(Type.Boolean()),
  /** create_ticket: templates for the ticket's fields. */
  ticket: Type.Optional(
    Strict({
      subject: Type.Optional(Template),
      description: Type.Optional(Template),
      priority: Type.Optional(Template),
    }),
  ),
  /**
   * end: whether reaching this node is the goal of the call (the analysis' `call_successful`).
   * Unmarked, an end node is a success unless the turn that led to it took an else edge
   * (docs/voice-pipeline.md, Post-call analysis).
   */
  success: Type.Optional(Type.Boolean({ description: 'End nodes only: reaching this node achieves the goal of the call (true) or is a failure path (false).' })),
  /** Where the dashboard's flow builder draws the node (Retell's name); no effect on calls. */
  display_position: Type.Optional(
    Strict(
      { x: Type.Number({ minimum: -100_000, maximum: 100_000 }), y: Type.Number({ minimum: -100_000, maximum: 100_000 }) },
      { description: "Where the flow builder draws the node: px from the canvas's top left. No effect on calls." },
    ),
  ),
  /** knowledge (issue 29): the account's knowledge bases the node answers from (docs/knowledge-bases.md). */
  knowledge_base_ids: Type.Optional(KnowledgeBaseIds),
  /** knowledge: retrieval settings; `filter_score` decides found / not found (default: every chunk that matches is found). */
  kb_config: Type.Optional(KbConfig),
  /** transfer_call (issue 24): where the call goes, an E.164 number or a SIP URI (Retell's shape). */
  transfer_destination: Type.Optional(TransferDestination),
  /** transfer_call: a cold transfer (the only kind carried; default). */
  transfer_option: Type.Optional(TransferOption),
  /** press_digit (issue 24): the keys sent, in order; each `,` pauses PRESS_DIGIT_PAUSE_MS. */
  digits: Type.Optional(Type.String({ pattern: NODE_DIGITS_PATTERN, description: 'Keys 0-9, * and #; a comma pauses 500 ms.' })),
  /**
   * transfer_call and press_digit: the edge taken when the node's action fails (the call cannot be
   * transferred or cannot send keys: a web call; the carrier refused). Its condition is not judged.
   * Without it, a failure ends the call. Retell's transfer node names its failure edge `edge`.
   */
  edge: Type.Optional(FlowEdge),
});

export const StartSpeaker = Type.Union([Type.Literal('agent'), Type.Literal('user')]);
export const ModelTemperature = Type.Number({ minimum: 0, maximum: 2 });
export const SilenceMs = Type.Integer({ minimum: 0, maximum: 60_000 });

/** The tunables of a flow: what `agent_override.conversation_flow` may change for one call. */
export const ConversationFlowSettings = {
  global_prompt: Type.Optional(Text()),
  default_dynamic_variables: Type.Optional(StringMap),
  start_speaker: Type.Optional(StartSpeaker),
  model: Type.Optional(Name(128)),
  model_temperature: Type.Optional(ModelTemperature),
  begin_after_user_silence_ms: Type.Optional(SilenceMs),
};

export const ConversationFlowDefinition = Strict({
  /**
   * Issue 27: what the dashboard calls the flow (ours: Retell's flows have no name). No effect on
   * calls; absent until set.
   */
  name: Type.Optional(Name(256)),
  start_node_id: GraphId,
  nodes: Type.Array(FlowNode, { minItems: 1, maxItems: 500 }),
  /** Custom functions the flow's `function` nodes call, by `tool_id`. */
  tools: Type.Optional(Type.Array(FlowTool, { maxItems: 100 })),
  ...ConversationFlowSettings,
  // Issue 29: the flow's knowledge bases (Retell's flow-level fields): every LLM request of its
  // conversation nodes (their replies and prompt-edge choices) carries the passages retrieved for
  // the caller's last turns, as a service LLM's does. A `knowledge` node searches its own bases.
  knowledge_base_ids: Type.Optional(KnowledgeBaseIds),
  kb_config: Type.Optional(KbConfig),
});
export type ConversationFlowDefinition = Static<typeof ConversationFlowDefinition>;
export type FlowNode = Static<typeof FlowNode>;
export type FlowEdge = Static<typeof FlowEdge>;
export type { FlowTool };
export type TransitionCondition = Static<typeof TransitionCondition>;
export type Equation = Static<typeof Equation>;
export type EquationOperator = (typeof EQUATION_OPERATORS)[number];
export type ExtractVariable = Static<typeof ExtractVariable>;
export type VariableType = (typeof VARIABLE_TYPES)[number];
export type NodeType = (typeof NODE_TYPES)[number];

export const ConversationFlowOverride = Strict(ConversationFlowSettings);
export type ConversationFlowOverride = Static<typeof ConversationFlowOverride>;

/**
 * Checks the graph: unique node ids, unique edge ids, the start node exists, every edge points at
 * a node, end nodes have no edges; the tools have unique ids and names and valid parameters, and
 * every `function` node names one of them; `knowledge` nodes (and only they) name knowledge bases;
 * only digits variables state digit bounds, their fewest at most their most. Returns a message
 * naming the first offender, or null.
 */
export function checkFlowGraph(flow: ConversationFlowDefinition): string | null {
  const tools = flow.tools ?? [];
  const toolIds = new Set<string>();
  for (const tool of tools) {
    if (toolIds.has(tool.tool_id)) return `duplicate tool_id "${tool.tool_id}" in tools`;
    toolIds.add(tool.tool_id);
  }
  const toolProblem = checkFunctions(tools, 'tools');
  if (toolProblem) return toolProblem;
  for (const node of flow.nodes) {
    if (node.type !== 'function') continue;
    if (node.tool_id === undefined) return `function node "${node.id}" needs a tool_id`;
    if (!toolIds.has(node.tool_id)) return `function node "${node.id}" names unknown tool_id "${node.tool_id}"`;
  }
  for (const node of flow.nodes) {
    const bases = node.knowledge_base_ids?.length ?? 0;
    if (node.type === 'knowledge' && bases === 0) return `knowledge node "${node.id}" needs knowledge_base_ids`;
    if (node.type !== 'knowledge' && (node.knowledge_base_ids !== undefined || node.kb_config !== undefined)) {
      return `node "${node.id}" is not a knowledge node: only knowledge nodes have knowledge_base_ids and kb_config`;
    }
  }
  const phoneProblem = checkPhoneNodes(flow.nodes);
  if (phoneProblem) return phoneProblem;
  const boundsProblem = checkDigitBounds(flow.nodes);
  if (boundsProblem) return boundsProblem;
  const nodeIds = new Set<string>();
  for (const node of flow.nodes) {
    if (nodeIds.has(node.id)) return `duplicate node id "${node.id}"`;
    nodeIds.add(node.id);
  }
  if (!nodeIds.has(flow.start_node_id)) return `start_node_id "${flow.start_node_id}" is not a node of the flow`;
  const edgeIds = new Set<string>();
  for (const node of flow.nodes) {
    if (node.type === 'end' && (node.edges?.length ?? 0) > 0) return `end node "${node.id}" cannot have edges`;
    if (node.type !== 'end' && node.success !== undefined) return `node "${node.id}" is not an end node: only end nodes are marked with success`;
    for (const edge of [...(node.edges ?? []), ...(node.edge ? [node.edge] : [])]) {
      if (edgeIds.has(edge.id)) return `duplicate edge id "${edge.id}"`;
      edgeIds.add(edge.id);
      if (!nodeIds.has(edge.destination_node_id)) {
        return `edge "${edge.id}" of node "${node.id}" points at unknown node "${edge.destination_node_id}"`;
      }
    }
  }
  return null;
}

/** Digit bounds are a digits variable's, and its fewest are at most its most. */
function checkDigitBounds(nodes: readonly FlowNode[]): string | null {
  for (const node of nodes) {
    for (const v of node.extract_variables ?? []) {
      const bounded = v.min_digits !== undefined || v.max_digits !== undefined;
      if (bounded && v.type !== 'digits') return `variable "${v.name}" of node "${node.id}" is not of type digits: only digits variables have min_digits and max_digits`;
      if ((v.min_digits ?? 1) > (v.max_digits ?? MAX_VALUE_DIGITS)) return `variable "${v.name}" of node "${node.id}" has min_digits ${v.min_digits} over max_digits ${v.max_digits ?? MAX_VALUE_DIGITS}`;
    }
  }
  return null;
}

/**
 * The phone nodes' fields (issue 24): a transfer_call node names its transfer_destination and
 * leaves the call (no `edges`, only its failure `edge`); a press_digit node names its digits and
 * says nothing (no instruction); no other node has these fields.
 */
function checkPhoneNodes(nodes: readonly FlowNode[]): string | null {
  for (const node of nodes) {
    const transfer = node.type === 'transfer_call';
    const press = node.type === 'press_digit';
    if (transfer && node.transfer_destination === undefined) return `transfer_call node "${node.id}" needs a transfer_destination`;
    if (transfer && (node.edges?.length ?? 0) > 0) return `transfer_call node "${node.id}" leaves the call: it has no edges, only the edge taken when the transfer fails`;
    if (!transfer && (node.transfer_destination !== undefined || node.transfer_option !== undefined)) {
      return `node "${node.id}" is not a transfer_call node: only transfer_call nodes have transfer_destination and transfer_option`;
    }
    if (press && node.digits === undefined) return `press_digit node "${node.id}" needs digits`;
    if (press && node.instruction !== undefined) return `press_digit node "${node.id}" says nothing: it has no instruction`;
    if (!press && node.digits !== undefined) return `node "${node.id}" is not a press_digit node: only press_digit nodes have digits`;
    if (!transfer && !press && node.edge !== undefined) return `node "${node.id}" has an edge for a failure: only transfer_call and press_digit nodes have one`;
  }
  return null;
}
