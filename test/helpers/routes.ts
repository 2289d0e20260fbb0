import { type Harness, sampleFlow } from './harness.ts';

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** Ids of one account's resources, for building requests against every route. */
export interface Fixture {
  flowId: string;
  llmId: string;
  agentId: string;
  callId: string;
}

export interface RouteCase {
  method: Method;
  /** Path with the fixture's ids filled in. */
  path: (f: Fixture) => string;
  /** A valid body for this route, if it takes one. */
  body?: (f: Fixture) => unknown;
  /** The path parameter's position, for bad-id cases: the path with `id` in its place. */
  withId?: (id: string) => string;
}

/** Every authenticated route of the call and agent API. */
export const API_ROUTES: RouteCase[] = [
  { method: 'POST', path: () => '/create-conversation-flow', body: () => sampleFlow() },
  { method: 'GET', path: (f) => `/get-conversation-flow/${f.flowId}`, withId: (id) => `/get-conversation-flow/${id}` },
  { method: 'PATCH', path: (f) => `/update-conversation-flow/${f.flowId}`, body: () => ({ global_prompt: 'x' }), withId: (id) => `/update-conversation-flow/${id}` },
  { method: 'GET', path: () => '/list-conversation-flows' },
  { method: 'DELETE', path: (f) => `/delete-conversation-flow/${f.flowId}`, withId: (id) => `/delete-conversation-flow/${id}` },
  { method: 'POST', path: () => '/create-service-llm', body: () => ({ general_prompt: 'x' }) },
  { method: 'GET', path: (f) => `/get-service-llm/${f.llmId}`, withId: (id) => `/get-service-llm/${id}` },
  { method: 'PATCH', path: (f) => `/update-service-llm/${f.llmId}`, body: () => ({ general_prompt: 'y' }), withId: (id) => `/update-service-llm/${id}` },
  { method: 'GET', path: () => '/list-service-llms' },
  { method: 'DELETE', path: (f) => `/delete-service-llm/${f.llmId}`, withId: (id) => `/delete-service-llm/${id}` },
  { method: 'POST', path: () => '/create-agent', body: (f) => ({ response_engine: { type: 'conversation_flow', conversation_flow_id: f.flowId } }) },
  { method: 'GET', path: (f) => `/get-agent/${f.agentId}`, withId: (id) => `/get-agent/${id}` },
  { method: 'GET', path: () => '/list-agents' },
  { method: 'PATCH', path: (f) => `/update-agent/${f.agentId}`, body: () => ({ agent_name: 'x' }), withId: (id) => `/update-agent/${id}` },
  { method: 'DELETE', path: (f) => `/delete-agent/${f.agentId}`, withId: (id) => `/delete-agent/${id}` },
  { method: 'GET', path: (f) => `/get-agent-versions/${f.agentId}`, withId: (id) => `/get-agent-versions/${id}` },
  { method: 'POST', path: () => '/v2/create-web-call', body: (f) => ({ agent_id: f.agentId }) },
  { method: 'PATCH', path: (f) => `/v2/update-call/${f.callId}`, body: () => ({ metadata: { a: 1 } }), withId: (id) => `/v2/update-call/${id}` },
  { method: 'GET', path: (f) => `/v2/get-call/${f.callId}`, withId: (id) => `/v2/get-call/${id}` },
  { method: 'POST', path: () => '/v2/list-calls', body: () => ({}) },
  { method: 'DELETE', path: (f) => `/v2/delete-call/${f.callId}`, withId: (id) => `/v2/delete-call/${id}` },
];

/** A flow, an LLM (unused by any agent), an agent on the flow, and a call, under `key`. */
export async function makeFixture(h: Harness, key: string): Promise<Fixture> {
  const flow = await h.request({ method: 'POST', url: '/create-conversation-flow', key, body: sampleFlow() });
  const spare = await h.request({ method: 'POST', url: '/create-conversation-flow', key, body: sampleFlow() });
  const llm = await h.request({ method: 'POST', url: '/create-service-llm', key, body: { general_prompt: 'hi' } });
  const agent = await h.request({
    method: 'POST',
    url: '/create-agent',
    key,
    body: { response_engine: { type: 'conversation_flow', conversation_flow_id: flow.json.conversation_flow_id } },
  });
  const call = await h.request({ method: 'POST', url: '/v2/create-web-call', key, body: { agent_id: agent.json.agent_id } });
  return { flowId: spare.json.conversation_flow_id, llmId: llm.json.llm_id, agentId: agent.json.agent_id, callId: call.json.call_id };
}

/** Row counts of every table the API writes; equal before and after means nothing was written. */
export async function tableCounts(h: Harness): Promise<Record<string, number>> {
  const db = h.runtime.store.db;
  const counts: Record<string, number> = {};
  for (const table of ['accounts', 'api_keys', 'conversation_flows', 'service_llms', 'agents', 'agent_versions', 'calls', 'idempotency_keys'] as const) {
    const row = await db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    counts[table] = Number(row.n);
  }
  const updated = await db.selectFrom('calls').select((eb) => eb.fn.max('updated_at').as('m')).executeTakeFirst();
  counts.calls_updated_at = Number(updated?.m ?? 0);
  const engines = await db.selectFrom('conversation_flows').select((eb) => eb.fn.max('updated_at').as('m')).executeTakeFirst();
  counts.flows_updated_at = Number(engines?.m ?? 0);
  return counts;
}
