/** What a conversation flow needs of the server to run (an LLM, for some of its nodes and edges). */
import type { ConversationFlow } from './types.ts';

/**
 * Names the first node or edge that needs an LLM (a prompt instruction or a prompt transition),
 * or null when the flow runs on the embedded engine alone. create-web-call uses it to refuse a
 * flow the server cannot run.
 */
export function flowNeedsLlm(flow: ConversationFlow): string | null {
  for (const node of flow.nodes) {
    if (node.instruction?.type === 'prompt') return `node ${node.id} (prompt instruction)`;
    for (const edge of node.edges ?? []) {
      if (edge.transition_condition.type === 'prompt') return `edge ${edge.id} of node ${node.id} (prompt transition)`;
    }
  }
  return null;
}
