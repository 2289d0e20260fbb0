import type { FastifyInstance } from 'fastify';
import { type CompiledQuery, sql } from 'kysely';
import pg from 'pg';
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

/** A route as the app registered it: a method and a URL template (`/v2/get-call/:call_id`). */
export interface AppRoute {
  method: string;
  url: string;
}

/**
 * Every route of a built app, read from Fastify's own route tree (`printRoutes`), so a route added
 * later is listed without editing a table. The HEAD twins Fastify adds to GET routes are left out.
 */
export function appRoutes(app: FastifyInstance): AppRoute[] {
  const routes: AppRoute[] = [];
  const prefixes: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^(.*?)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = (match[1] ?? '').length / 4;
    const url = (depth === 0 ? '' : (prefixes[depth - 1] ?? '')) + (match[2] ?? '');
    prefixes[depth] = url;
    prefixes.length = depth + 1;
    for (const method of (match[3] ?? '').split(', ').filter((m) => m !== '' && m !== 'HEAD')) routes.push({ method, url });
  }
  return routes;
}

/** A JSON Schema as the OpenAPI document gives it (plain data). */
export type JsonSchema = Record<string, any>;

/** The request schemas of a route: its body, and its query and path parameters by name. */
export interface RouteSchemas {
  body?: JsonSchema;
  query: Record<string, { schema: JsonSchema; required: boolean }>;
  params: Record<string, JsonSchema>;
}

/**
 * The request schemas of every documented route, from the app's own OpenAPI document, keyed
 * `METHOD /url/:param` as `appRoutes` lists them. Hidden routes (pages, bundles, health) have none.
 */
export function routeSchemas(app: FastifyInstance): Map<string, RouteSchemas> {
  const raw = app.swagger() as { paths: Record<string, Record<string, any>>; components?: { schemas?: Record<string, unknown> } };
  // The document names shapes as components (`$ref`); the corpus wants them inline.
  const inline = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(inline);
    if (node === null || typeof node !== 'object') return node;
    const { $ref, ...rest } = node as Record<string, unknown>;
    const target = typeof $ref === 'string' ? raw.components?.schemas?.[$ref.replace('#/components/schemas/', '')] : undefined;
    const own = Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, inline(value)]));
    return target === undefined ? own : { ...(inline(target) as object), ...own };
  };
  const doc = { paths: inline(raw.paths) as Record<string, Record<string, any>> };
  const schemas = new Map<string, RouteSchemas>();
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const entry: RouteSchemas = { body: operation.requestBody?.content?.['application/json']?.schema, query: {}, params: {} };
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in === 'query') entry.query[parameter.name] = { schema: parameter.schema, required: parameter.required === true };
        if (parameter.in === 'path') entry.params[parameter.name] = parameter.schema;
      }
      schemas.set(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`, entry);
    }
  }
  // Served but left out of the document as duplicates: the same operation as their twin.
  const twin = schemas.get('POST /v2/create-web-call');
  if (twin) schemas.set('POST /v3/create-web-call', twin);
  return schemas;
}

/** `Fixture` plus a lead, a ticket, a webhook subscription and a delivery to it. */
export interface FullFixture extends Fixture {
  leadId: number;
  webhookId: string;
  deliveryId: string;
}

/** `makeFixture`, then a webhook on every event kind, a lead (so a delivery) and a ticket on it. */
export async function makeFullFixture(h: Harness, key: string): Promise<FullFixture> {
  const base = await makeFixture(h, key);
  const hook = await h.request({ method: 'POST', url: '/api/v1/webhooks/set.php', key, body: { url: 'https://example.com/hook', events: ['*'] } });
  const lead = await h.request({ method: 'POST', url: '/api/v1/leads/create.php', key, body: { name: 'Ada', phone: '555-0100' } });
  await h.request({ method: 'POST', url: '/api/v1/tickets/create.php', key, body: { subject: 's', description: 'd', lead_id: lead.json.id } });
  const log = await h.request({ method: 'GET', url: '/api/v1/webhooks/deliveries.php', key });
  if (hook.status !== 201 || lead.status !== 201 || log.status !== 200 || !log.json.deliveries[0]) {
    throw new Error(`fixture: ${hook.raw} ${lead.raw} ${log.raw}`);
  }
  return { ...base, leadId: lead.json.id, webhookId: hook.json.id, deliveryId: log.json.deliveries[0].id };
}

/** The value of each path parameter (by its name) in a request that names an existing thing. */
export function paramValues(f: FullFixture): Record<string, string> {
  return {
    conversation_flow_id: f.flowId,
    llm_id: f.llmId,
    agent_id: f.agentId,
    call_id: f.callId,
    file: 'web-sdk.js',
    '*': 'index.html',
  };
}

/**
 * A valid request per route (`METHOD /url/:param`), the base the bad-input corpus mutates. A
 * route missing here still gets every case, on a base synthesised from its schema.
 */
export const VALID_REQUESTS: Record<string, (f: FullFixture) => { body?: unknown; query?: Record<string, string> }> = {
  'POST /create-conversation-flow': () => ({ body: sampleFlow() }),
  'PATCH /update-conversation-flow/:conversation_flow_id': () => ({ body: { global_prompt: 'x', model_temperature: 0.5, begin_after_user_silence_ms: 1000 } }),
  'POST /create-service-llm': () => ({
    body: {
      general_prompt: 'x',
      begin_message: 'Hello',
      model_temperature: 1,
      begin_after_user_silence_ms: 500,
      states: [{ name: 'start', state_prompt: 'p', edges: [{ destination_state_name: 'start', description: 'd' }] }],
      starting_state: 'start',
      default_dynamic_variables: { a: 'b' },
    },
  }),
  'PATCH /update-service-llm/:llm_id': () => ({ body: { general_prompt: 'y' } }),
  'POST /create-agent': (f) => ({
    body: {
      response_engine: { type: 'conversation_flow', conversation_flow_id: f.flowId },
      agent_name: 'A',
      voice_id: 'flite-kal16',
      language: 'en-US',
      webhook_url: 'https://example.com/agent',
      data_storage_setting: 'everything',
      max_call_duration_ms: 600_000,
      end_call_after_silence_ms: 60_000,
      interruption_sensitivity: 0.5,
    },
  }),
  'GET /get-agent/:agent_id': () => ({ query: { version: '1' } }),
  'PATCH /update-agent/:agent_id': () => ({ body: { agent_name: 'x', max_call_duration_ms: 600_000 } }),
  'POST /v2/create-web-call': (f) => ({
    body: {
      agent_id: f.agentId,
      agent_version: 1,
      metadata: { a: 1 },
      service_llm_dynamic_variables: { name: 'Ada' },
      agent_override: { agent: { max_call_duration_ms: 600_000 }, conversation_flow: { model_temperature: 0.5 } },
    },
  }),
  'PATCH /v2/update-call/:call_id': () => ({ body: { metadata: { a: 1 }, custom_attributes: { n: 1, s: 'x', b: true }, override_dynamic_variables: { a: 'b' } } }),
  'POST /v2/list-calls': (f) => ({
    body: {
      filter_criteria: { agent_id: [f.agentId], call_status: ['registered'], start_timestamp: { lower_threshold: 0, upper_threshold: 1 } },
      sort_order: 'ascending',
      limit: 10,
      pagination_key: f.callId,
    },
  }),
  'POST /api/v1/webhooks/set.php': (f) => ({ body: { id: f.webhookId, url: 'https://example.com/hook', events: ['lead.created'] } }),
  'POST /api/v1/webhooks/delete.php': (f) => ({ body: { id: f.webhookId } }),
  'GET /api/v1/webhooks/deliveries.php': (f) => ({
    query: { webhook_id: f.webhookId, event: 'lead.created', status: 'pending', limit: '10', pagination_key: f.deliveryId },
  }),
  'POST /api/v1/webhooks/redeliver.php': (f) => ({ body: { delivery_id: f.deliveryId } }),
  'POST /api/v1/webhooks/test.php': (f) => ({ body: { id: f.webhookId } }),
  'POST /api/v1/webhooks/agent-secret.php': () => ({ body: {} }),
  'POST /api/v1/leads/create.php': () => ({ body: { name: 'Ada', phone: '555-0100', email: 'ada@example.com', notes: 'n', custom_fields: { a: 1 } } }),
  'POST /api/v1/leads/update.php': (f) => ({ body: { id: f.leadId, name: 'Ada', phone: '555-0101', email: 'a@example.com', notes: 'm', custom_fields: { b: 'x' } } }),
  'GET /api/v1/leads/get.php': (f) => ({ query: { id: String(f.leadId) } }),
  'GET /api/v1/leads/list.php': (f) => ({ query: { limit: '10', pagination_key: String(f.leadId + 1) } }),
  'POST /api/v1/tickets/create.php': (f) => ({ body: { subject: 's', description: 'd', priority: 'high', lead_id: f.leadId, call_id: f.callId } }),
  'GET /api/v1/tickets/list.php': (f) => ({ query: { limit: '10', pagination_key: '1000', lead_id: String(f.leadId) } }),
  'POST /demo/api/calls': (f) => ({ body: { agent_id: f.agentId } }),
};

/** The fingerprint query of each harness's store, compiled once, and how to run it. */
const fingerprints = new WeakMap<Harness, () => Promise<Record<string, unknown> | undefined>>();

/**
 * A fingerprint of everything stored: each table's row count and, where it has one, its greatest
 * `updated_at`. Equal before and after a request means the request wrote nothing (the harness
 * clock is advanced between requests, so an update moves `updated_at`). Tables are read from the
 * store itself, so a new table is covered without editing this (rate_buckets aside: see below).
 */
export async function storeFingerprint(h: Harness): Promise<Record<string, string>> {
  let read = fingerprints.get(h);
  if (!read) {
    read = await fingerprintReader(h);
    fingerprints.set(h, read);
  }
  return Object.fromEntries(Object.entries((await read()) ?? {}).map(([k, v]) => [k, String(v)]));
}

async function fingerprintReader(h: Harness): Promise<() => Promise<Record<string, unknown> | undefined>> {
  const db = h.runtime.store.db;
  // rate_buckets is left out: a create-web-call that is refused after reaching the service
  // still took a token from the account's bucket, as it does from the in-memory buckets on
  // SQLite (requests count against the rate limit whatever their answer).
  const tables = (await db.introspection.getTables()).filter((t) => !t.name.startsWith('kysely_') && t.name !== 'rate_buckets');
  const parts = tables.flatMap((t) => [
    sql`(select count(*) from ${sql.table(t.name)}) as ${sql.id(t.name)}`,
    ...(t.columns.some((c) => c.name === 'updated_at')
      ? [sql`(select max(updated_at) from ${sql.table(t.name)}) as ${sql.id(`${t.name}__updated_at`)}`]
      : []),
  ]);
  const query: CompiledQuery<Record<string, unknown>> = sql<Record<string, unknown>>`select ${sql.join(parts)}`.compile(db);
  const url = h.testStore.databaseUrl;
  if (url === null) return async () => (await db.executeQuery(query)).rows[0];
  // On PostgreSQL, planning this query of a subquery per table costs most of its time: one
  // connection of its own runs it as a prepared statement, planned once (a corpus of 14,000
  // requests read it 14,000 times: 85 s unprepared, about 20 s prepared).
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {}); // the database is dropped under it when the harness closes
  await client.connect();
  const close = h.close.bind(h);
  h.close = async () => {
    await client.end().catch(() => {});
    await close();
  };
  return async () => (await client.query<Record<string, unknown>>({ name: 'store_fingerprint', text: query.sql })).rows[0];
}
