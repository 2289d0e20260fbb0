/**
 * How a flow node's edges are judged: keyword and equation conditions here, every prompt
 * condition of a node by one LLM request; an `always` edge is taken when none of the others holds
 * (the else edge, when the node has others).
 */
import type { ChatMessage, LlmProvider } from '../../providers/llm.ts';
import { chatText } from '../../providers/llm.ts';
import { words } from './extract.ts';
import { renderTemplate, variable } from './variables.ts';
import { EngineError, type Equation, type FlowEdge, type FlowNode } from './types.ts';

/** What a node's edges are judged with. */
export interface EdgeJudge {
  /** The variables as the turn sees them (equations read them). */
  vars: Readonly<Record<string, string>>;
  /** Which of the node's prompt edges holds (null: none); asked once, when the first prompt edge is reached. */
  askPrompt(promptEdges: readonly FlowEdge[]): Promise<FlowEdge | null>;
  /** An edge whose condition could not be judged: it does not hold. */
  onEdgeError?: (edgeId: string, error: unknown) => void;
}

/** The edge a node takes. */
export interface EdgeChoice {
  edge: FlowEdge;
  /** It is a conversation node's else edge: its `always` edge, taken because none of its other edges held. */
  viaElse: boolean;
}

/**
 * The first of the node's edges that holds, in order (keyword, equation, prompt), else its
 * `always` edge; undefined when none holds and it has no `always` edge.
 */
export async function chooseEdge(node: FlowNode, userText: string, judge: EdgeJudge): Promise<EdgeChoice | undefined> {
  const edges = node.edges ?? [];
  let promptVerdict: FlowEdge | null | undefined; // undefined = not asked yet
  for (const edge of edges) {
    const c = edge.transition_condition;
    let hit = false;
    if (c.type === 'keyword') hit = keywordMatch(c.keywords, userText);
    else if (c.type === 'equation') {
      try {
        hit = equationsHold(c.equations, c.operator, judge.vars);
      } catch (error) {
        // A condition that cannot be judged does not hold: the else path, and the log says why.
        judge.onEdgeError?.(edge.id, error);
        hit = false;
      }
    } else if (c.type === 'prompt') {
      if (promptVerdict === undefined) promptVerdict = await judge.askPrompt(edges.filter((e) => e.transition_condition.type === 'prompt'));
      hit = promptVerdict === edge;
    }
    if (hit) return { edge, viaElse: false };
  }
  const always = edges.find((e) => e.transition_condition.type === 'always');
  if (!always) return undefined;
  // A node whose only edges are `always` just moves on; with other edges, `always` is the else.
  // Tool nodes chain on with `always`: only a conversation node's else edge is a fallback.
  return { edge: always, viaElse: node.type === 'conversation' && edges.some((e) => e.transition_condition.type !== 'always') };
}

/** What the LLM judging a node's prompt edges is given. */
export interface PromptEdgesRequest {
  promptEdges: readonly FlowEdge[];
  vars: Readonly<Record<string, string>>;
  /** The conversation so far (its last 12 messages are shown). */
  history: readonly ChatMessage[];
  /** The turn's reference material (context.ts), put after the system prompt; none by default. */
  reference?: readonly ChatMessage[];
  model?: string;
  signal: AbortSignal;
}

/** One LLM request judges every prompt edge of a node; returns the first that holds, or null. */
export async function askPromptEdges(llm: LlmProvider, request: PromptEdgesRequest): Promise<FlowEdge | null> {
  const { promptEdges, vars, signal } = request;
  const list = promptEdges
    .map((e, i) => `${i + 1}. ${renderTemplate(e.transition_condition.type === 'prompt' ? e.transition_condition.prompt : '', vars)}`)
    .join('\n');
  const transcript = request.history.slice(-12).map((m) => `${m.role}: ${m.role === 'assistant' || m.role === 'user' ? m.content : ''}`).join('\n');
  let answer: string;
  try {
    answer = await chatText(llm, {
      messages: [
        { role: 'system', content: 'You route a phone conversation. Given the conversation so far, answer with only the number of the first condition that is true, or 0 if none is.' },
        ...(request.reference ?? []),
        { role: 'user', content: `Conversation:\n${transcript}\n\nConditions:\n${list}\n\nAnswer with one number.` },
      ],
      ...(request.model ? { model: request.model } : {}),
      temperature: 0,
      signal,
    });
  } catch (e) {
    if (signal.aborted) throw e;
    throw new EngineError('error_llm', 'LLM failed while judging a prompt transition', e);
  }
  const n = Number(/\d+/.exec(answer)?.[0] ?? '0');
  return promptEdges[n - 1] ?? null;
}

/** Whole-word (or whole-phrase), case-insensitive keyword match. */
export function keywordMatch(keywords: readonly string[], text: string): boolean {
  const hay = ` ${words(text).join(' ')} `;
  return keywords.some((k) => {
    const needle = words(k).join(' ');
    return needle.length > 0 && hay.includes(` ${needle} `);
  });
}

/** Evaluates equations joined by && or ||; `left`/`right` may hold {{var}} or a bare variable name. */
export function equationsHold(equations: readonly Equation[], op: '&&' | '||', vars: Readonly<Record<string, string>>): boolean {
  if (equations.length === 0) return false;
  const results = equations.map((e) => equationHolds(e, vars));
  return op === '&&' ? results.every(Boolean) : results.some(Boolean);
}

function operand(raw: string | undefined, vars: Readonly<Record<string, string>>): string {
  if (raw === undefined) return '';
  if (raw.includes('{{')) return renderTemplate(raw, vars).trim();
  const bare = raw.trim();
  const value = /^[A-Za-z_][A-Za-z0-9_.-]*$/.test(bare) ? variable(vars, bare) : undefined;
  return value ?? bare;
}

function equationHolds(e: Equation, vars: Readonly<Record<string, string>>): boolean {
  if (e.operator === 'exists' || e.operator === 'not_exists') {
    // Existence is about a variable: a bare name is looked up, never taken as a literal.
    const raw = e.left.trim();
    const value = raw.includes('{{') ? renderTemplate(raw, vars).trim() : (variable(vars, raw) ?? '').trim();
    return e.operator === 'exists' ? value !== '' : value === '';
  }
  const left = operand(e.left, vars);
  const right = operand(e.right, vars);
  const ln = Number(left);
  const rn = Number(right);
  const numeric = left !== '' && right !== '' && Number.isFinite(ln) && Number.isFinite(rn);
  switch (e.operator) {
    case '==':
      return numeric ? ln === rn : left.toLowerCase() === right.toLowerCase();
    case '!=':
      return numeric ? ln !== rn : left.toLowerCase() !== right.toLowerCase();
    case '>':
      return numeric && ln > rn;
    case '>=':
      return numeric && ln >= rn;
    case '<':
      return numeric && ln < rn;
    case '<=':
      return numeric && ln <= rn;
    case 'contains':
      return left.toLowerCase().includes(right.toLowerCase());
    case 'not_contains':
      return !left.toLowerCase().includes(right.toLowerCase());
  }
}
