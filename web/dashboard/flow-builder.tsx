/**
 * The visual flow builder: a conversation flow's nodes on a canvas (dragged to move, each showing
 * what it says), edges drawn from a node's handle to another node, and the selected node's panel
 * (its text, variables to extract, function, a phone node's number or keys and its failure edge,
 * edges with their conditions), and the flow's name. It edits the flow's JSON object and nothing else, so it round-trips exactly with the JSON tab: a node gets
 * `display_position` only once it is moved. The server's validation error is shown on the node it
 * names. Loaded only on a flow's page.
 */
import { useRef, useState } from 'preact/hooks';
import { FLOW_TEMPLATES } from './flow-templates.ts';
import { BUILDER_NODE_TYPES, PHONE_TYPES, phoneProblem, retype, retypeVariable, withBound } from './flow-nodes.ts';
import type { Condition, Edge, Flow, Node, Variable } from './flow-types.ts';

const VARIABLE_TYPES = ['text', 'digits', 'number', 'email', 'name', 'yes_no'];
const OPERATORS = ['==', '!=', '>', '>=', '<', '<=', 'contains', 'not_contains', 'exists', 'not_exists'];
const W = 180;
const H = 72;

/** The node a server validation message concerns: `node "id"`, or `/nodes/3/...` by index. */
export function nodeOfError(flow: Flow, error: string | null): string | null {
  if (!error) return null;
  const named = /node "([^"]+)"/.exec(error);
  if (named) return named[1]!;
  const indexed = /nodes[/.](\d+)/.exec(error);
  return indexed ? (flow.nodes?.[Number(indexed[1])]?.id ?? null) : null;
}

/** Positions: a node's own, else laid out in rows by distance from the start node. */
function positions(flow: Flow): Map<string, { x: number; y: number }> {
  const nodes = flow.nodes ?? [];
  const depth = new Map<string, number>();
  const queue = flow.start_node_id && nodes.some((n) => n.id === flow.start_node_id) ? [flow.start_node_id] : nodes.slice(0, 1).map((n) => n.id);
  for (const id of queue) depth.set(id, 0);
  while (queue.length > 0) {
    const id = queue.shift()!;
    for (const e of nodes.find((n) => n.id === id)?.edges ?? []) {
      if (depth.has(e.destination_node_id)) continue;
      depth.set(e.destination_node_id, depth.get(id)! + 1);
      queue.push(e.destination_node_id);
    }
  }
  const perRow = new Map<number, number>();
  const out = new Map<string, { x: number; y: number }>();
  for (const n of nodes) {
    const row = depth.get(n.id) ?? Math.max(0, ...depth.values()) + 1;
    const column = perRow.get(row) ?? 0;
    perRow.set(row, column + 1);
    out.set(n.id, n.display_position ?? { x: 20 + column * (W + 40), y: 20 + row * (H + 60) });
  }
  return out;
}

/** A node's edges and its failure edge, each with whether it is the failure edge. */
function outgoing(n: Node): Array<{ edge: Edge; failure: boolean }> {
  return [...(n.edges ?? []).map((edge) => ({ edge, failure: false })), ...(n.edge ? [{ edge: n.edge, failure: true }] : [])];
}

function conditionLabel(c: Condition): string {
  if (c.type === 'keyword') return c.keywords.join(' / ') || '(no keywords)';
  if (c.type === 'prompt') return c.prompt.length > 24 ? `${c.prompt.slice(0, 23)}…` : c.prompt;
  if (c.type === 'equation') return c.equations.map((e) => `${e.left} ${e.operator} ${e.right ?? ''}`.trim()).join(` ${c.operator} `);
  return 'always';
}

function freshId(taken: Iterable<string>, stem: string): string {
  const used = new Set(taken);
  for (let i = 1; ; i++) if (!used.has(`${stem}${i}`)) return `${stem}${i}`;
}

export function FlowBuilder({ flow, onChange, error, isNew }: { flow: Flow; onChange: (flow: Flow) => void; error: string | null; isNew: boolean }) {
  const nodes = flow.nodes ?? [];
  const [selected, setSelected] = useState<string | null>(nodes[0]?.id ?? null);
  const [connecting, setConnecting] = useState<string | null>(null);
  const [newType, setNewType] = useState('conversation');
  const drag = useRef<{ id: string; dx: number; dy: number } | null>(null);
  const at = positions(flow);
  const invalid = nodeOfError(flow, error);

  const setNodes = (next: Node[], extra: Partial<Flow> = {}) => onChange({ ...flow, ...extra, nodes: next });
  const update = (id: string, change: (n: Node) => Node) => setNodes(nodes.map((n) => (n.id === id ? change(n) : n)));
  const allEdgeIds = () => nodes.flatMap((n) => outgoing(n).map((o) => o.edge.id));

  const addNode = () => {
    const id = freshId(nodes.map((n) => n.id), newType === 'end' ? 'end_' : 'node_');
    const below = selected ? at.get(selected) : undefined;
    const lowest = Math.max(0, ...[...at.values()].map((p) => p.y + H + 60));
    const node: Node = retype({
      id,
      type: newType,
      ...(PHONE_TYPES.includes(newType) ? {} : { instruction: { type: 'static_text', text: '' } }),
      display_position: below ? { x: below.x, y: below.y + H + 60 } : { x: 20, y: nodes.length === 0 ? 20 : lowest },
    }, newType);
    if (newType === 'function') node.tool_id = flow.tools?.[0]?.tool_id ?? '';
    setNodes([...nodes, node], nodes.length === 0 ? { start_node_id: id } : {});
    setSelected(id);
  };

  const deleteNode = (id: string) => {
    const rest = nodes.filter((n) => n.id !== id).map((n) => {
      const next = n.edges?.some((e) => e.destination_node_id === id) ? { ...n, edges: n.edges.filter((e) => e.destination_node_id !== id) } : n;
      if (next.edge?.destination_node_id !== id) return next;
      const { edge: _gone, ...kept } = next;
      return kept;
    });
    setNodes(rest, flow.start_node_id === id ? { start_node_id: rest[0]?.id ?? '' } : {});
    setSelected(rest[0]?.id ?? null);
  };

  const connect = (from: string, to: string) => {
    setConnecting(null);
    if (from === to) return;
    const edge: Edge = { id: freshId(allEdgeIds(), 'edge_'), destination_node_id: to, transition_condition: { type: 'always' } };
    // A transfer leaves the call: its only edge is the one taken when the transfer fails.
    update(from, (n) => (n.type === 'transfer_call' ? { ...n, edge: { ...edge, id: n.edge?.id ?? edge.id } } : { ...n, edges: [...(n.edges ?? []), edge] }));
    setSelected(from);
  };

  const onPointerDown = (e: PointerEvent, id: string) => {
    if ((e.target as HTMLElement).closest('button')) return;
    if (connecting) return connect(connecting, id);
    setSelected(id);
    const p = at.get(id)!;
    drag.current = { id, dx: e.clientX - p.x, dy: e.clientY - p.y };
    (e.currentTarget as HTMLElement).setPointerCapture(e.pointerId);
  };
  const onPointerMove = (e: PointerEvent) => {
    const d = drag.current;
    if (!d) return;
    const x = Math.max(0, Math.round(e.clientX - d.dx));
    const y = Math.max(0, Math.round(e.clientY - d.dy));
    const p = at.get(d.id);
    if (p && p.x === x && p.y === y) return;
    update(d.id, (n) => ({ ...n, display_position: { x, y } }));
  };
  const onPointerUp = () => {
    drag.current = null;
  };

  const width = Math.max(360, ...[...at.values()].map((p) => p.x + W + 20));
  const height = Math.max(200, ...[...at.values()].map((p) => p.y + H + 20));
  const node = nodes.find((n) => n.id === selected) ?? null;

  return (
    <div id="flow-builder">
      {isNew && (
        <div class="row" id="flow-templates">
          <span class="muted">Start from:</span>
          {FLOW_TEMPLATES.map((t) => (
            <button type="button" class="secondary" key={t.key} data-template={t.key} onClick={() => { onChange(t.flow()); setSelected(null); }}>{t.title}</button>
          ))}
        </div>
      )}
      <div class="row">
        <label>Flow name <input id="flow-name" maxLength={256} placeholder="(unnamed)" value={flow.name ?? ''} onInput={(e) => onChange(named(flow, (e.target as HTMLInputElement).value))} /></label>
      </div>
      <div class="row builder-tools">
        <select id="builder-new-type" value={newType} onChange={(e) => setNewType((e.target as HTMLSelectElement).value)} aria-label="Type of the new node">
          {BUILDER_NODE_TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
        </select>
        <button type="button" id="builder-add-node" onClick={addNode}>Add node</button>
        {connecting && <span class="notice" id="builder-connecting">Click the node the edge goes to (<a href="#" onClick={(e) => { e.preventDefault(); setConnecting(null); }}>cancel</a>)</span>}
      </div>
      <div class="builder-canvas-wrap">
        <div class="builder-canvas" id="builder-canvas" style={{ width: `${width}px`, height: `${height}px` }} onPointerMove={onPointerMove} onPointerUp={onPointerUp}>
          <svg width={width} height={height} aria-hidden="true">
            <defs>
              <marker id="builder-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" /></marker>
            </defs>
            {nodes.flatMap((n) =>
              outgoing(n).map(({ edge: e, failure }) => {
                const a = at.get(n.id);
                const b = at.get(e.destination_node_id);
                if (!a || !b) return null;
                const [x1, y1, x2, y2] = [a.x + W / 2, a.y + H, b.x + W / 2, b.y];
                return (
                  <g class={failure ? 'edge failure' : 'edge'} key={e.id} data-edge={e.id} data-from={n.id} data-to={e.destination_node_id} data-failure={failure ? 'true' : undefined}>
                    <path d={`M ${x1} ${y1} C ${x1} ${y1 + 40}, ${x2} ${y2 - 40}, ${x2} ${y2}`} marker-end="url(#builder-arrow)" />
                    <text x={(x1 + x2) / 2} y={(y1 + y2) / 2}>{failure ? (n.type === 'transfer_call' ? 'if the transfer fails' : 'if the keys fail') : conditionLabel(e.transition_condition)}</text>
                  </g>
                );
              }),
            )}
          </svg>
          {nodes.map((n) => {
            const p = at.get(n.id)!;
            return (
              <div
                key={n.id}
                class={`bnode ${n.type}${n.id === flow.start_node_id ? ' start' : ''}${n.id === selected ? ' selected' : ''}${n.id === invalid || phoneProblem(n) ? ' invalid' : ''}`}
                data-node={n.id}
                style={{ left: `${p.x}px`, top: `${p.y}px`, width: `${W}px`, height: `${H}px` }}
                onPointerDown={(e) => onPointerDown(e, n.id)}
              >
                <strong>{n.name || n.id}</strong>
                <span class="type">{n.id === flow.start_node_id ? `start · ${n.type}` : n.type}</span>
                <span class="says">{says(n)}</span>
                {n.type !== 'end' && <button type="button" class="handle" data-action="connect" title="Draw an edge from this node" onClick={() => setConnecting(n.id)}>→</button>}
              </div>
            );
          })}
        </div>
      </div>
      {nodes.length === 0 && <p class="muted" id="builder-empty">An empty canvas: choose a type and press Add node.</p>}
      {invalid && <div class="error" id="builder-node-error" data-node={invalid}>Node {invalid}: {error}</div>}
      {node && <NodePanel key={node.id} flow={flow} node={node} onChange={(next) => update(node.id, () => next)} onRename={(to) => rename(flow, node.id, to, onChange, setSelected)} onDelete={() => deleteNode(node.id)} onStart={() => onChange({ ...flow, start_node_id: node.id })} />}
    </div>
  );
}

/** What a node's card says: its words, and a phone node's number or keys. */
function says(n: Node): string {
  const words = n.instruction?.text ?? '';
  if (n.type === 'transfer_call') return `→ ${n.transfer_destination?.number || '(no number)'}${words ? ` · ${words}` : ''}`;
  if (n.type === 'press_digit') return `keys ${n.digits || '(none)'}`;
  return words;
}

/** The flow with its name set, or without one when it is cleared (absent, never ""). */
function named(flow: Flow, name: string): Flow {
  const { name: _old, ...rest } = flow;
  return name.trim() ? { ...rest, name } : rest;
}

/** Renames a node, and every edge and the start that point at it. */
function rename(flow: Flow, from: string, to: string, onChange: (flow: Flow) => void, select: (id: string) => void) {
  if (!to || to === from || (flow.nodes ?? []).some((n) => n.id === to)) return;
  const nodes = (flow.nodes ?? []).map((n) => ({
    ...n,
    ...(n.id === from ? { id: to } : {}),
    ...(n.edges ? { edges: n.edges.map((e) => (e.destination_node_id === from ? { ...e, destination_node_id: to } : e)) } : {}),
    ...(n.edge?.destination_node_id === from ? { edge: { ...n.edge, destination_node_id: to } } : {}),
  }));
  onChange({ ...flow, nodes, ...(flow.start_node_id === from ? { start_node_id: to } : {}) });
  select(to);
}

const value = (e: Event) => (e.target as HTMLInputElement).value;

function NodePanel({ flow, node, onChange, onRename, onDelete, onStart }: { flow: Flow; node: Node; onChange: (n: Node) => void; onRename: (id: string) => void; onDelete: () => void; onStart: () => void }) {
  const [id, setId] = useState(node.id);
  const others = (flow.nodes ?? []).filter((n) => n.id !== node.id);
  const set = (field: string, v: unknown) => {
    const next = { ...node };
    if (v === undefined) delete next[field];
    else next[field] = v;
    onChange(next);
  };
  const edges = node.edges ?? [];
  const setEdge = (i: number, edge: Edge) => set('edges', edges.map((e, j) => (j === i ? edge : e)));
  const variables = node.extract_variables ?? [];
  const setVariables = (next: Variable[]) => set('extract_variables', next.length > 0 ? next : undefined);
  return (
    <div class="builder-panel" id="builder-panel" data-node={node.id}>
      <div class="row">
        <label>Id <input id="node-id" value={id} pattern="[A-Za-z0-9_.:-]+" onInput={(e) => setId(value(e))} onChange={() => onRename(id.trim())} /></label>
        <label>Name <input id="node-name" value={node.name ?? ''} onInput={(e) => set('name', value(e) || undefined)} /></label>
        <label>Type <select id="node-type" value={node.type} onChange={(e) => onChange(retype(node, value(e)))}>
          {BUILDER_NODE_TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
        </select></label>
      </div>
      {node.type !== 'press_digit' && (
        <>
          <div class="row">
            <label>{node.type === 'transfer_call' ? 'Says first (optional)' : 'Says'} <select id="node-instruction-type" value={node.instruction?.type ?? 'static_text'} onChange={(e) => set('instruction', { type: value(e), text: node.instruction?.text ?? '' })}>
              <option value="static_text">these words</option>
              <option value="prompt">what the LLM makes of this prompt</option>
            </select></label>
          </div>
          {/* A transfer's words are optional: cleared, the instruction goes. */}
          <textarea id="node-text" rows={3} value={node.instruction?.text ?? ''}
            onInput={(e) => set('instruction', node.type === 'transfer_call' && value(e) === '' ? undefined : { type: node.instruction?.type ?? 'static_text', text: value(e) })} />
        </>
      )}
      {PHONE_TYPES.includes(node.type) && <PhoneFields node={node} others={others.map((n) => n.id)} taken={(flow.nodes ?? []).flatMap((n) => outgoing(n).map((o) => o.edge.id))} set={set} />}
      {node.type === 'function' && (
        <label>Function <select id="node-tool" value={node.tool_id ?? ''} onChange={(e) => set('tool_id', value(e))}>
          <option value="">(choose)</option>
          {(flow.tools ?? []).map((t) => <option key={t.tool_id} value={t.tool_id}>{t.name ?? t.tool_id}</option>)}
        </select></label>
      )}
      {node.type === 'knowledge' && (
        <div class="row">
          <label>Knowledge bases <input id="node-knowledge-bases" placeholder="knowledge_base_..., ..." value={((node.knowledge_base_ids as string[] | undefined) ?? []).join(', ')}
            onChange={(e) => set('knowledge_base_ids', value(e).split(',').map((id) => id.trim()).filter(Boolean))} /></label>
          <label>Found from score <input id="node-filter-score" type="number" min={0} max={1} step={0.05} value={String((node.kb_config as { filter_score?: number } | undefined)?.filter_score ?? '')}
            onChange={(e) => set('kb_config', value(e) === '' ? undefined : { ...(node.kb_config as object | undefined), filter_score: Number(value(e)) })} /></label>
        </div>
      )}
      {node.type === 'end' && (
        <label>Outcome <select id="node-success" value={node.success === undefined ? '' : String(node.success)} onChange={(e) => set('success', value(e) === '' ? undefined : value(e) === 'true')}>
          <option value="">(from the path taken)</option>
          <option value="true">the goal of the call</option>
          <option value="false">a failure path</option>
        </select></label>
      )}
      <h3>Variables to extract</h3>
      {variables.map((v, i) => (
        <div class="row" key={i} data-variable={i}>
          <input aria-label="Variable name" value={v.name} onInput={(e) => setVariables(variables.map((x, j) => (j === i ? { ...x, name: value(e) } : x)))} />
          <select aria-label="Variable type" value={v.type} onChange={(e) => setVariables(variables.map((x, j) => (j === i ? retypeVariable(x, value(e)) : x)))}>
            {VARIABLE_TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
          </select>
          {v.type === 'digits' && (['min_digits', 'max_digits'] as const).map((bound) => (
            <input key={bound} type="number" min={1} max={50} aria-label={bound === 'min_digits' ? 'Fewest digits' : 'Most digits'} placeholder={bound === 'min_digits' ? 'fewest' : 'most'} value={v[bound] === undefined ? '' : String(v[bound])}
              onInput={(e) => setVariables(variables.map((x, j) => (j === i ? withBound(x, bound, value(e)) : x)))} />
          ))}
          <button type="button" class="secondary" onClick={() => setVariables(variables.filter((_, j) => j !== i))}>Remove</button>
        </div>
      ))}
      <div class="row">
        <button type="button" class="secondary" id="node-add-variable" onClick={() => setVariables([...variables, { name: `var_${variables.length + 1}`, type: 'text' }])}>Add variable</button>
      </div>
      {node.type !== 'end' && node.type !== 'transfer_call' && (
        <>
          <h3>Edges</h3>
          {edges.map((edge, i) => (
            <EdgeEditor key={edge.id} edge={edge} targets={others.map((n) => n.id)} onChange={(next) => setEdge(i, next)} onDelete={() => set('edges', edges.filter((_, j) => j !== i))} />
          ))}
          {edges.length === 0 && <p class="muted">No edges: draw one with the node's → handle.</p>}
        </>
      )}
      <div class="row">
        {flow.start_node_id !== node.id && <button type="button" class="secondary" id="node-make-start" onClick={onStart}>Start here</button>}
        <button type="button" class="danger" id="node-delete" onClick={onDelete}>Delete node</button>
      </div>
    </div>
  );
}

/** A transfer_call node's number and option, a press_digit node's keys, and either's failure edge. */
function PhoneFields({ node, others, taken, set }: { node: Node; others: string[]; taken: string[]; set: (field: string, v: unknown) => void }) {
  const problem = phoneProblem(node);
  const failTo = (to: string) =>
    set('edge', to === '' ? undefined : { id: node.edge?.id ?? freshId(taken, 'edge_'), destination_node_id: to, transition_condition: node.edge?.transition_condition ?? { type: 'always' } });
  return (
    <>
      {node.type === 'transfer_call' && (
        <div class="row">
          <label>Transfer to <input id="node-transfer-number" placeholder="+14155550100 or sip:desk@pbx.example.com" value={node.transfer_destination?.number ?? ''} class={problem ? 'invalid' : ''}
            onInput={(e) => set('transfer_destination', { ...node.transfer_destination, type: 'predefined', number: value(e).trim() })} /></label>
          <label>Option <select id="node-transfer-option" value={node.transfer_option ? 'cold_transfer' : ''} onChange={(e) => set('transfer_option', value(e) === '' ? undefined : { type: 'cold_transfer' })}>
            <option value="">(default: cold transfer)</option>
            <option value="cold_transfer">cold transfer: the agent leaves the call</option>
          </select></label>
        </div>
      )}
      {node.type === 'press_digit' && (
        <label>Keys <input id="node-digits" placeholder="1,#" value={node.digits ?? ''} class={problem ? 'invalid' : ''} onInput={(e) => set('digits', value(e).trim())} /></label>
      )}
      {problem && <p class="error" id="node-phone-problem">{problem}</p>}
      <label>If it fails, go to <select id="node-failure-edge" value={node.edge?.destination_node_id ?? ''} onChange={(e) => failTo(value(e))}>
        <option value="">(end the call)</option>
        {[...new Set([...(node.edge ? [node.edge.destination_node_id] : []), ...others])].map((t) => <option key={t} value={t}>{t}</option>)}
      </select></label>
    </>
  );
}

function EdgeEditor({ edge, targets, onChange, onDelete }: { edge: Edge; targets: string[]; onChange: (e: Edge) => void; onDelete: () => void }) {
  const c = edge.transition_condition;
  const [word, setWord] = useState('');
  const setCondition = (next: Condition) => onChange({ ...edge, transition_condition: next });
  const retype = (type: string) => {
    if (type === c.type) return;
    if (type === 'keyword') setCondition({ type: 'keyword', keywords: [] });
    else if (type === 'equation') setCondition({ type: 'equation', equations: [{ left: '', operator: '==', right: '' }], operator: '&&' });
    else if (type === 'prompt') setCondition({ type: 'prompt', prompt: '' });
    else setCondition({ type: 'always' });
  };
  const addWord = () => {
    const w = word.trim();
    if (c.type !== 'keyword' || !w || c.keywords.includes(w)) return;
    setCondition({ ...c, keywords: [...c.keywords, w] });
    setWord('');
  };
  return (
    <div class="builder-edge" data-edge={edge.id}>
      <div class="row">
        <label>To <select data-field="destination" value={edge.destination_node_id} onChange={(e) => onChange({ ...edge, destination_node_id: value(e) })}>
          {[...new Set([edge.destination_node_id, ...targets])].map((t) => <option key={t} value={t}>{t}</option>)}
        </select></label>
        <label>When <select data-field="condition" value={c.type} onChange={(e) => retype(value(e))}>
          <option value="keyword">the caller says a keyword</option>
          <option value="equation">variables match</option>
          <option value="prompt">the LLM judges</option>
          <option value="always">otherwise (always)</option>
        </select></label>
        <button type="button" class="secondary" data-action="delete-edge" onClick={onDelete}>Delete edge</button>
      </div>
      {c.type === 'keyword' && (
        <div class="chips">
          {c.keywords.map((k) => (
            <span class="chip" key={k} data-keyword={k}>{k} <button type="button" aria-label={`Remove ${k}`} onClick={() => setCondition({ ...c, keywords: c.keywords.filter((x) => x !== k) })}>×</button></span>
          ))}
          <input data-field="keyword" placeholder="keyword, Enter" value={word} onInput={(e) => setWord(value(e))} onKeyDown={(e) => { if (e.key === 'Enter' || e.key === ',') { e.preventDefault(); addWord(); } }} onBlur={addWord} />
        </div>
      )}
      {c.type === 'equation' && (
        <>
          {c.equations.map((q, i) => (
            <div class="row" key={i} data-equation={i}>
              <input aria-label="Variable" placeholder="variable" value={q.left} onInput={(e) => setCondition({ ...c, equations: c.equations.map((x, j) => (j === i ? { ...x, left: value(e) } : x)) })} />
              <select aria-label="Operator" value={q.operator} onChange={(e) => setCondition({ ...c, equations: c.equations.map((x, j) => (j === i ? { ...x, operator: value(e) } : x)) })}>
                {OPERATORS.map((o) => <option key={o} value={o}>{o}</option>)}
              </select>
              {!q.operator.includes('exists') && <input aria-label="Right" value={q.right ?? ''} onInput={(e) => setCondition({ ...c, equations: c.equations.map((x, j) => (j === i ? { ...x, right: value(e) } : x)) })} />}
              {c.equations.length > 1 && <button type="button" class="secondary" onClick={() => setCondition({ ...c, equations: c.equations.filter((_, j) => j !== i) })}>×</button>}
            </div>
          ))}
          <div class="row">
            <select aria-label="All or any" value={c.operator} onChange={(e) => setCondition({ ...c, operator: value(e) as '&&' | '||' })}>
              <option value="&&">all of them</option>
              <option value="||">any of them</option>
            </select>
            <button type="button" class="secondary" onClick={() => setCondition({ ...c, equations: [...c.equations, { left: '', operator: '==', right: '' }] })}>Add row</button>
          </div>
        </>
      )}
      {c.type === 'prompt' && <textarea rows={2} data-field="prompt" value={c.prompt} onInput={(e) => setCondition({ ...c, prompt: value(e) })} />}
    </div>
  );
}
