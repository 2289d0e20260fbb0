/** How a flow's conversation ended, decided on entering the node that ends it. */
import type { EngineEnding, FlowNode } from './types.ts';

/**
 * An end node's ending: its `success` mark when it has one; unmarked, a success unless the
 * turn that led here took an else edge (an `always` edge of a conversation node that has other
 * edges, taken because none of them matched: the fallback path).
 */
export function endingAt(node: FlowNode, elseFrom: string | undefined): EngineEnding {
  const base = { via: 'end_node' as const, nodeId: node.id };
  if (node.success !== undefined) {
    return { ...base, successful: node.success, marked: true, detail: `end node "${node.id}" (marked ${node.success ? 'a success' : 'a failure path'})` };
  }
  if (elseFrom !== undefined) {
    return { ...base, successful: false, marked: false, detail: `end node "${node.id}" reached through the else edge of "${elseFrom}"` };
  }
  return { ...base, successful: true, marked: false, detail: `end node "${node.id}"` };
}

/** The ending of a call whose phone node failed with no failure edge: not the goal of the call. */
export function failedNodeEnding(node: FlowNode, why: string): EngineEnding {
  return { via: 'end_node', nodeId: node.id, successful: false, marked: false, detail: `${node.type} node "${node.id}" failed (${why}) and has no edge for it` };
}
