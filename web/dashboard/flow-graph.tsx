/**
 * A conversation flow drawn read-only: nodes as boxes, edges as arrows labelled with their
 * transition condition. The layout is computed by dagre (@dagrejs/dagre, layered graph layout,
 * pure JS, no eval: fine under the page's CSP); the drawing is SVG made here.
 */
import dagre from '@dagrejs/dagre';
import { useMemo } from 'preact/hooks';

interface FlowEdge {
  id: string;
  destination_node_id: string;
  transition_condition?: { type: string; keywords?: string[]; prompt?: string };
}

interface FlowNode {
  id: string;
  type: string;
  name?: string;
  edges?: FlowEdge[];
  /** transfer_call and press_digit: the edge taken when the node's action fails. */
  edge?: FlowEdge;
}

/** Box size of a node, in px. */
const NODE_W = 150;
const NODE_H = 46;

/** Short text for an edge's condition. */
function conditionLabel(edge: FlowEdge): string {
  const c = edge.transition_condition;
  if (!c) return '';
  if (c.type === 'keyword') return (c.keywords ?? []).join(' / ');
  if (c.type === 'prompt') return (c.prompt ?? '').length > 24 ? `${c.prompt!.slice(0, 23)}…` : (c.prompt ?? '');
  return c.type;
}

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

export function FlowGraph({ flow }: { flow: Record<string, unknown> }) {
  const nodes = Array.isArray(flow.nodes) ? (flow.nodes as FlowNode[]) : [];
  const start = typeof flow.start_node_id === 'string' ? flow.start_node_id : null;
  const layout = useMemo(() => {
    const g = new dagre.graphlib.Graph({ multigraph: true });
    g.setGraph({ rankdir: 'TB', nodesep: 30, ranksep: 50, marginx: 10, marginy: 10 });
    g.setDefaultEdgeLabel(() => ({}));
    for (const node of nodes) g.setNode(node.id, { width: NODE_W, height: NODE_H });
    for (const node of nodes) {
      for (const edge of node.edges ?? []) {
        if (!g.hasNode(edge.destination_node_id)) continue;
        const label = clip(conditionLabel(edge), 28);
        g.setEdge(node.id, edge.destination_node_id, { label, width: label.length * 6, height: 14, labelpos: 'c' }, edge.id);
      }
      if (node.edge && g.hasNode(node.edge.destination_node_id)) {
        g.setEdge(node.id, node.edge.destination_node_id, { label: 'if it fails', failure: true, width: 66, height: 14, labelpos: 'c' }, node.edge.id);
      }
    }
    dagre.layout(g);
    const size = g.graph();
    return {
      width: Math.ceil(size.width ?? 0),
      height: Math.ceil(size.height ?? 0),
      nodes: g.nodes().map((id) => ({ id, ...g.node(id) })),
      edges: g.edges().map((e) => ({ key: `${e.v}->${e.w}:${e.name ?? ''}`, from: e.v, to: e.w, ...g.edge(e) })),
    };
  }, [flow]);

  if (nodes.length === 0) return <p class="muted" id="flow-graph">This flow has no nodes.</p>;
  const byId = new Map(nodes.map((n) => [n.id, n]));
  return (
    <div class="graph" id="flow-graph">
      <svg width={layout.width} height={layout.height} viewBox={`0 0 ${layout.width} ${layout.height}`} role="img" aria-label="Flow nodes and edges">
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" />
          </marker>
        </defs>
        {layout.edges.map((e) => (
          <g class={e.failure ? 'edge failure' : 'edge'} key={e.key} data-from={e.from} data-to={e.to}>
            <path d={((e.points ?? []) as { x: number; y: number }[]).map((p, i) => `${i === 0 ? 'M' : 'L'} ${p.x} ${p.y}`).join(' ')} marker-end="url(#arrow)" />
            {e.label && typeof e.x === 'number' && typeof e.y === 'number' && <text x={e.x} y={e.y + 4} text-anchor="middle">{String(e.label)}</text>}
          </g>
        ))}
        {layout.nodes.map((n) => {
          const node = byId.get(n.id);
          return (
            <g class={`node ${node?.type ?? ''}${n.id === start ? ' start' : ''}`} key={n.id} data-node={n.id} transform={`translate(${n.x - NODE_W / 2}, ${n.y - NODE_H / 2})`}>
              <rect width={NODE_W} height={NODE_H} rx={8} />
              <text x={NODE_W / 2} y={20} text-anchor="middle">{clip(node?.name ?? n.id, 22)}</text>
              <text class="type" x={NODE_W / 2} y={36} text-anchor="middle">{n.id === start ? `start · ${node?.type ?? ''}` : (node?.type ?? '')}</text>
            </g>
          );
        })}
      </svg>
    </div>
  );
}
