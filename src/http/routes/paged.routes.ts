import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errors } from '../../domain/errors.ts';
import { Strict } from '../../domain/schema-kit.ts';
import type { AgentService } from '../../services/agent.service.ts';
import type { CallService } from '../../services/call.service.ts';
import { AgentResponse, AgentVersionSummary, ConversationFlowResponse, ServiceLlmResponse } from '../schemas/agent.schemas.ts';
import { CallResponse, ListCallsBody } from '../schemas/call.schemas.ts';
import { PathId, authErrors } from '../schemas/common.schemas.ts';
import { operation } from '../openapi.ts';

const DEFAULT_LIMIT = 50;

/** `?limit=&pagination_key=&sort_order=`, as query strings carry them. */
const PageQuery = Strict({
  limit: Type.Optional(Type.String({ pattern: '^([1-9][0-9]{0,2}|1000)$', description: '1 to 1000; default 50.' })),
  pagination_key: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'The `pagination_key` of the previous page.' })),
  sort_order: Type.Optional(Type.Union([Type.Literal('ascending'), Type.Literal('descending')], { description: 'By creation time; default descending.' })),
});
type PageQuery = { limit?: string; pagination_key?: string; sort_order?: 'ascending' | 'descending' };

const Page = <T extends TSchema>(item: T, title: string) =>
  Type.Object(
    {
      items: Type.Array(item),
      has_more: Type.Boolean(),
      pagination_key: Type.Optional(Type.String({ description: 'Present when `has_more`: send it to get the next page.' })),
    },
    { title },
  );

/**
 * Paginated lists at the paths and in the shape of Retell's SDK 5 (`call.list`, `agent.list`,
 * `conversationFlow.list`, `llm.list`): `{items, has_more, pagination_key}`, where `pagination_key` is the id
 * of the page's last item. They list what the spec-style routes list (POST /v2/list-calls,
 * GET /list-agents, GET /list-conversation-flows), which answer plain arrays.
 */
export function pagedRoutes(calls: CallService, agents: AgentService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post('/v3/list-calls', {
      schema: operation({
        operationId: 'listCallsPage',
        tags: ['calls'],
        summary: 'List calls, a page at a time',
        description: 'The body of /v2/list-calls (`filter_criteria`, `sort_order`, `limit`, `pagination_key`); the answer is a page.',
        body: ListCallsBody,
        response: { 200: Page(CallResponse, 'CallPage'), ...authErrors },
      }),
    }, async (request) => {
      const limit = request.body.limit ?? DEFAULT_LIMIT;
      const rows = await calls.listCalls(request.principal.accountId, { ...request.body, limit: limit + 1 });
      return pageOf(rows.slice(0, limit), rows.length > limit, (call) => call.call_id);
    });

    app.post('/v2/list-agents', {
      schema: operation({
        operationId: 'listAgentsPage',
        tags: ['agents'],
        summary: 'List agents (latest versions), a page at a time',
        description: '`filter_criteria.query` keeps the agents whose name (any case) or id contains it.',
        querystring: PageQuery,
        body: Strict({ filter_criteria: Type.Optional(Strict({ query: Type.Optional(Type.String({ maxLength: 256 })) })) }, { title: 'ListAgentsPageRequest' }),
        response: { 200: Page(AgentResponse, 'AgentPage'), ...authErrors },
      }),
    }, async (request) => {
      const query = request.body.filter_criteria?.query?.toLowerCase();
      const all = await agents.listAgents(request.principal.accountId);
      const matching = query === undefined ? all : all.filter((a) => a.agent_id.includes(query) || (a.agent_name ?? '').toLowerCase().includes(query));
      return paginate(matching, (agent) => agent.agent_id, request.query, 'an agent');
    });

    app.get('/list-agent-versions/:agent_id', {
      schema: operation({
        operationId: 'listAgentVersions',
        tags: ['agents'],
        summary: "An agent's versions, a page at a time (Retell's `agent.listVersions`), newest first by default",
        description: '`pagination_key` is the version number of the previous page\'s last item.',
        params: Type.Object({ agent_id: PathId }),
        querystring: PageQuery,
        response: { 200: Page(AgentVersionSummary, 'AgentVersionPage'), ...authErrors },
      }),
    }, async (request) => {
      const oldestFirst = await agents.listVersionSummaries(request.principal.accountId, request.params.agent_id);
      return paginate(oldestFirst.reverse(), (v) => String(v.version), request.query, 'a version of this agent');
    });

    app.get('/v2/list-conversation-flows', {
      schema: operation({
        operationId: 'listConversationFlowsPage',
        tags: ['conversation-flows'],
        summary: 'List conversation flows, a page at a time',
        querystring: PageQuery,
        response: { 200: Page(ConversationFlowResponse, 'ConversationFlowPage'), ...authErrors },
      }),
    }, async (request) => {
      const flows = await agents.listFlows(request.principal.accountId);
      return paginate(flows, (flow) => flow.conversation_flow_id, request.query, 'a conversation flow');
    });

    app.get('/v2/list-retell-llms', {
      schema: operation({
        operationId: 'listRetellLlmsPage',
        tags: ['service-llms'],
        summary: "List service LLMs, a page at a time (Retell's `llm.list`)",
        querystring: PageQuery,
        response: { 200: Page(ServiceLlmResponse, 'ServiceLlmPage'), ...authErrors },
      }),
    }, async (request) => {
      const llms = await agents.listLlms(request.principal.accountId);
      return paginate(llms, (llm) => llm.llm_id, request.query, 'a service LLM');
    });
  };
}

/** One page of `newestFirst` (the services' order) after `pagination_key`. */
function paginate<T>(newestFirst: T[], idOf: (item: T) => string, query: PageQuery, what: string) {
  const ordered = query.sort_order === 'ascending' ? [...newestFirst].reverse() : newestFirst;
  let start = 0;
  if (query.pagination_key !== undefined) {
    const at = ordered.findIndex((item) => idOf(item) === query.pagination_key);
    if (at < 0) throw errors.invalidRequest(`pagination_key is not ${what} of this account`);
    start = at + 1;
  }
  const limit = query.limit === undefined ? DEFAULT_LIMIT : Number(query.limit);
  return pageOf(ordered.slice(start, start + limit), start + limit < ordered.length, idOf);
}

function pageOf<T>(items: T[], hasMore: boolean, idOf: (item: T) => string) {
  const last = items.at(-1);
  return { items, has_more: hasMore, ...(hasMore && last !== undefined ? { pagination_key: idOf(last) } : {}) };
}
