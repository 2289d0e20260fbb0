// The conversation flow the knowledge-node tests call: a question answered from a knowledge base.

/** The edge conditions docs/knowledge-bases.md names for a knowledge node. */
const FOUND = { type: 'equation', operator: '&&', equations: [{ left: 'knowledge_result', operator: '==', right: 'found' }] };
const NOT_FOUND = { type: 'equation', operator: '&&', equations: [{ left: 'knowledge_result', operator: '==', right: 'not_found' }] };

/** greet -> (the caller's question) -> ask (knowledge) -> found: thanks / not found: sorry. */
export function knowledgeFlow(kbId: string, kbConfig?: Record<string, unknown>): { start_node_id: string; nodes: Array<Record<string, unknown>> } {
  return {
    start_node_id: 'greet',
    nodes: [
      {
        id: 'greet', type: 'conversation',
        instruction: { type: 'static_text', text: 'Harbor Bikes, how can I help?' },
        edges: [{ id: 'question', destination_node_id: 'ask', transition_condition: { type: 'always' } }],
      },
      {
        id: 'ask', type: 'knowledge',
        instruction: { type: 'static_text', text: 'What would you like to know?' },
        knowledge_base_ids: [kbId],
        ...(kbConfig ? { kb_config: kbConfig } : {}),
        edges: [
          { id: 'found', destination_node_id: 'thanks', transition_condition: FOUND },
          { id: 'not_found', destination_node_id: 'sorry', transition_condition: NOT_FOUND },
        ],
      },
      { id: 'thanks', type: 'end', instruction: { type: 'static_text', text: 'Glad to help. Goodbye.' } },
      { id: 'sorry', type: 'end', instruction: { type: 'static_text', text: 'Sorry, I do not know that. Goodbye.' } },
    ],
  };
}
