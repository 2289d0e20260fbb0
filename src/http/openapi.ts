/**
 * The OpenAPI document (/openapi.json, /docs) as generators want it: a camelCase `operationId` and
 * tags on every operation, named component schemas, `servers`, tag descriptions, examples.
 *
 * Every route schema goes through `operation()`, whose type makes `operationId`, `tags` and
 * `summary` required (test/api/openapi.test.ts fails on a route without them). Component schemas
 * are named where a wire shape is defined, with a TypeBox `title` (`{ title: 'Call' }`):
 * `nameComponents` moves every titled schema of the document into `components.schemas` under its
 * title and refers to it with `$ref`. Only the document changes: validation and serialisation
 * keep using the schemas themselves, so naming a shape never changes what the API accepts or
 * answers. Two different schemas under one title are an error (one name, one shape).
 */
import { isDeepStrictEqual } from 'node:util';
import type { FastifySchema } from 'fastify';
import type { SwaggerOptions } from '@fastify/swagger';

/** The operations' tags, in the order the reference shows them, with their descriptions. */
export const API_TAGS = {
  calls: 'Web calls: create one for the browser SDK (or `cli join`), follow it, read its transcript, recording, analysis and latency.',
  agents: 'Voice agents: a response engine (a conversation flow or a service LLM) with voice, language and call limits. Every update makes a new version; calls pin one.',
  'conversation-flows': 'Conversation flows: nodes and edges that an agent follows (static text or prompts, keyword/equation/prompt transitions, leads and tickets).',
  'service-llms': 'Service LLMs: a prompt-driven response engine on the configured OpenAI-compatible model, with optional states.',
  webhooks: 'Webhook subscriptions, their delivery log and redelivery. Deliveries are signed as Standard Webhooks (docs/webhooks.md).',
  leads: 'Leads (contacts), created by flows or through the API; their changes are webhook events.',
  tickets: 'Support tickets, created by flows or through the API; `ticket.created` is a webhook event.',
  'phone-numbers': 'Phone numbers: E.164 numbers reached over a SIP trunk or through Twilio, with the agents that answer and call from them (docs/telephony.md).',
  voices: "The voices of this server's speech engine: what an agent's `voice_id` may name, with language and sample rate.",
} as const;

/** A tag of the API reference. */
export type ApiTag = keyof typeof API_TAGS;

/** The API key scheme every authenticated operation names. */
export const API_KEY_SECURITY: Array<{ [scheme: string]: readonly string[] }> = [{ apiKey: [] }];

/** What every documented operation says about itself. */
export interface OperationDoc {
  /** camelCase, unique across the API: what generated clients name the method (`createWebCall`). */
  operationId: string;
  /** Exactly one tag: the resource the operation belongs to (generators group methods by it). */
  tags: [ApiTag];
  /** One line for the reference's sidebar. */
  summary: string;
  description?: string;
}

/**
 * A route's schema with its OpenAPI metadata: `operationId`, `tags` and `summary` are required;
 * `security` defaults to the API key (pass `security: []` for a public operation). Returns the
 * schema with its literal types, so Fastify's TypeBox provider still infers the handler's types.
 *
 * ```ts
 * app.get('/v2/get-call/:call_id', {
 *   schema: operation({ operationId: 'getCall', tags: ['calls'], summary: 'Get a call', params, response: { 200: CallResponse, ...authErrors } }),
 * }, handler);
 * ```
 */
export function operation<const S extends FastifySchema & OperationDoc>(schema: S): S & { security: typeof API_KEY_SECURITY } {
  return { security: API_KEY_SECURITY, ...schema };
}

/** Examples of the main component schemas, shown by the reference and checked against their schemas (test/api/openapi.test.ts). */
const EXAMPLES: Record<string, unknown> = {
  Error: { status: 'error', code: 'call_not_found', message: 'Cannot find call call_5Jd0sQ2bYp8xT1 under this API key.' },
  CreateWebCallRequest: { agent_id: 'agent_3kTq9mWzR1', metadata: { order: 42 }, service_llm_dynamic_variables: { customer_name: 'Ada' } },
  Call: {
    call_id: 'call_5Jd0sQ2bYp8xT1',
    call_type: 'web_call',
    access_token: 'eyJjYWxsX2lkIjoiY2FsbF81SmQwc1EyYllwOHhUMSJ9.c2lnbmF0dXJl',
    agent_id: 'agent_3kTq9mWzR1',
    agent_version: 1,
    agent_name: 'Reception',
    call_status: 'registered',
    start_timestamp: null,
    end_timestamp: null,
    duration_ms: null,
    transcript: null,
    transcript_object: null,
    transcript_with_tool_calls: null,
    recording_url: null,
    disconnection_reason: null,
    call_analysis: null,
    metadata: { order: 42 },
    latency: null,
    media: null,
    data_storage_setting: 'everything',
    service_llm_dynamic_variables: { customer_name: 'Ada' },
    override_dynamic_variables: null,
    custom_attributes: null,
    current_node_id: null,
    current_state: null,
    created_at: 1767225600000,
  },
  Agent: {
    agent_id: 'agent_3kTq9mWzR1',
    version: 2,
    agent_name: 'Reception',
    response_engine: { type: 'conversation_flow', conversation_flow_id: 'cf_8hVn2LqP0a' },
    voice_id: 'flite-kal16',
    language: 'en-US',
    webhook_url: null,
    data_storage_setting: 'everything',
    max_call_duration_ms: 3600000,
    end_call_after_silence_ms: 600000,
    reminder_trigger_ms: 10000,
    reminder_max_count: 1,
    interruption_sensitivity: 1,
    post_call_analysis_data: [],
    boosted_keywords: [],
    responsiveness: 1,
    end_of_turn_min_silence_ms: 250,
    end_of_turn_max_silence_ms: 1200,
    preemptive_replies: true,
    created_at: 1767225600000,
    last_modification_timestamp: 1767229200000,
  },
  ConversationFlow: {
    conversation_flow_id: 'cf_8hVn2LqP0a',
    start_node_id: 'greet',
    nodes: [
      {
        id: 'greet',
        type: 'conversation',
        instruction: { type: 'static_text', text: 'Hello, thanks for calling {{company}}. How can I help?' },
        edges: [{ id: 'else', destination_node_id: 'bye', transition_condition: { type: 'always' } }],
      },
      { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Goodbye.' } },
    ],
    default_dynamic_variables: { company: 'Acme' },
    created_at: 1767225600000,
    last_modification_timestamp: 1767225600000,
  },
  ServiceLlm: {
    llm_id: 'llm_Qw7rT2yU9i',
    general_prompt: 'You are the receptionist of Acme. Be brief.',
    begin_message: 'Hello, Acme reception.',
    model_temperature: 0.2,
    created_at: 1767225600000,
    last_modification_timestamp: 1767225600000,
  },
  Webhook: {
    id: 'wh_N4bV6cX8zL',
    url: 'https://example.com/hooks/switchboard',
    events: ['call.finished', 'lead.created'],
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    status: 'active',
    disabled_reason: null,
    disabled_at: null,
    failing_since: null,
    created_at: 1767225600000,
    updated_at: 1767225600000,
  },
  Lead: {
    id: 17,
    name: 'Ada Lovelace',
    phone: '+44 20 7946 0000',
    email: 'ada@example.com',
    notes: null,
    custom_fields: { source: 'web' },
    call_id: 'call_5Jd0sQ2bYp8xT1',
    created_at: 1767225600000,
    updated_at: 1767225600000,
  },
  Ticket: {
    id: 4,
    subject: 'Reschedule the appointment',
    description: 'The caller asked to move Tuesday to Thursday.',
    priority: 'normal',
    status: 'open',
    lead_id: 17,
    call_id: 'call_5Jd0sQ2bYp8xT1',
    created_at: 1767225600000,
    updated_at: 1767225600000,
  },
};

/** The options of @fastify/swagger: document metadata (with `guides`, Markdown links, in the description), servers, tags and the component naming. */
export function openApiOptions(publicBaseUrl: string, guides: string | null = null): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Switchboard API',
        version: '1.0.0',
        summary: 'Voice agents that talk to people in the browser.',
        description: [
          'Web calls on configured voice agents, their agents and response engines, account webhooks, leads and tickets.',
          'Every operation but the media WebSocket takes `Authorization: Bearer sb_...`. Errors are `{status: "error", code, message}` with a stable snake_case `code`; a resource that does not exist under the key is 422.',
          ...(guides === null ? [] : [`Guides:\n\n${guides}`]),
        ].join('\n\n'),
        // The project has not chosen a license: say so rather than name one (as package.json's UNLICENSED).
        license: { name: 'UNLICENSED: no license has been chosen yet' },
      },
      servers: [{ url: publicBaseUrl, description: 'This server (PUBLIC_BASE_URL)' }],
      tags: Object.entries(API_TAGS).map(([name, description]) => ({ name, description })),
      components: { securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'An API key: `sb_...` (`npm run -s cli -- keys create`).' } } },
    },
    transformObject: (documents) => ('openapiObject' in documents ? nameComponents(documents.openapiObject) : documents.swaggerObject),
  };
}

/**
 * Moves every schema with a `title` into `components.schemas[title]`, replacing it with a `$ref`
 * (its `description`, when it has one of its own at that place, stays beside the `$ref`), and
 * adds the examples. Throws when one title names two different schemas.
 */
export function nameComponents<T extends { paths?: unknown; components?: unknown }>(document: T): T {
  const components = ((document.components ??= {}) as Record<string, unknown>);
  const named = ((components.schemas ??= {}) as Record<string, unknown>);
  const found = new Map<string, unknown>();

  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit);
    if (typeof node !== 'object' || node === null) return node;
    const object = node as Record<string, unknown>;
    const copy: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(object)) {
      // `properties` maps names to schemas: a property called `title` is not a title.
      copy[key] = key === 'properties' || key === 'patternProperties' ? mapValues(value, visit) : visit(value);
    }
    const title = copy.title;
    if (typeof title !== 'string' || !isSchemaLike(copy)) return copy;
    const { title: _title, ...schema } = copy;
    const known = found.get(title);
    if (known !== undefined && !isDeepStrictEqual(known, schema)) {
      throw new Error(`OpenAPI: two different schemas are titled "${title}"; give one of them another title`);
    }
    found.set(title, schema);
    return { $ref: `#/components/schemas/${title}` };
  };

  document.paths = visit(document.paths);
  for (const name of [...found.keys()].sort()) {
    const schema = found.get(name) as Record<string, unknown>;
    named[name] = EXAMPLES[name] === undefined ? schema : { ...schema, examples: [EXAMPLES[name]] };
  }
  return document;
}

function mapValues(value: unknown, f: (v: unknown) => unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return f(value);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, f(v)]));
}

/** A JSON schema (not an example, parameter or response object that happens to have a title). */
function isSchemaLike(object: Record<string, unknown>): boolean {
  return 'type' in object || 'anyOf' in object || 'oneOf' in object || 'allOf' in object || 'properties' in object || 'enum' in object || 'const' in object;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/**
 * What the document's operations miss of what generators need: an `operationId` that is camelCase
 * and unique, exactly one known tag, a summary. Empty when the document is complete; the test
 * (test/api/openapi.test.ts) asserts that, so a route added without `operation()` fails it.
 */
export function operationProblems(document: { paths?: Record<string, Record<string, unknown>> }): string[] {
  const problems: string[] = [];
  const seen = new Map<string, string>();
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const [method, value] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue;
      const where = `${method.toUpperCase()} ${path}`;
      const op = value as { operationId?: unknown; tags?: unknown; summary?: unknown };
      if (typeof op.operationId !== 'string' || !/^[a-z][a-zA-Z0-9]*$/.test(op.operationId)) {
        problems.push(`${where}: no camelCase operationId`);
      } else if (seen.has(op.operationId)) {
        problems.push(`${where}: operationId ${op.operationId} is also ${seen.get(op.operationId)}'s`);
      } else {
        seen.set(op.operationId, where);
      }
      if (!Array.isArray(op.tags) || op.tags.length !== 1 || !(op.tags[0] in API_TAGS)) {
        problems.push(`${where}: needs exactly one tag of ${Object.keys(API_TAGS).join(', ')}`);
      }
      if (typeof op.summary !== 'string' || op.summary === '') problems.push(`${where}: no summary`);
    }
  }
  return problems;
}
