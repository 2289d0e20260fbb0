import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AgentService } from '../../services/agent.service.ts';
import {
  AgentCreateBody,
  AgentResponse,
  AgentUpdateBody,
  CreateAgentVersionBody,
  ConversationFlowCreateBody,
  ConversationFlowResponse,
  ConversationFlowUpdateBody,
  ServiceLlmCreateBody,
  ServiceLlmResponse,
  ServiceLlmUpdateBody,
  PublishAgentVersionBody,
  VersionQuery,
} from '../schemas/agent.schemas.ts';
import { ErrorResponse, PathId, authErrors } from '../schemas/common.schemas.ts';
import { operation } from '../openapi.ts';

const FlowIdParam = Type.Object({ conversation_flow_id: PathId });
const LlmIdParam = Type.Object({ llm_id: PathId });
const AgentIdParam = Type.Object({ agent_id: PathId });
/** What a delete answers: 204, or 409 while something still uses the resource. */
const deleted = { 204: Type.Null(), ...authErrors, 409: ErrorResponse };

/** Conversation flows, service LLMs and agents, in the path style of the call operations. */
export function agentRoutes(agents: AgentService): FastifyPluginAsyncTypebox {
  return async (app) => {
    // --- conversation flows
    app.post('/create-conversation-flow', {
      schema: operation({ operationId: 'createConversationFlow', tags: ['conversation-flows'], summary: 'Create a conversation flow', body: ConversationFlowCreateBody, response: { 201: ConversationFlowResponse, ...authErrors } }),
    }, async (request, reply) => reply.code(201).send(await agents.createFlow(request.principal.accountId, request.body)));

    app.get('/get-conversation-flow/:conversation_flow_id', {
      schema: operation({ operationId: 'getConversationFlow', tags: ['conversation-flows'], summary: 'Get a conversation flow', params: FlowIdParam, response: { 200: ConversationFlowResponse, ...authErrors } }),
    }, async (request) => agents.getFlow(request.principal.accountId, request.params.conversation_flow_id));

    app.patch('/update-conversation-flow/:conversation_flow_id', {
      schema: operation({ operationId: 'updateConversationFlow', tags: ['conversation-flows'], summary: 'Update a conversation flow', params: FlowIdParam, body: ConversationFlowUpdateBody, response: { 200: ConversationFlowResponse, ...authErrors } }),
    }, async (request) => agents.updateFlow(request.principal.accountId, request.params.conversation_flow_id, request.body));

    app.get('/list-conversation-flows', {
      schema: operation({ operationId: 'listConversationFlows', tags: ['conversation-flows'], summary: 'List conversation flows', response: { 200: Type.Array(ConversationFlowResponse), 401: authErrors[401] } }),
    }, async (request) => agents.listFlows(request.principal.accountId));

    app.delete('/delete-conversation-flow/:conversation_flow_id', {
      schema: operation({ operationId: 'deleteConversationFlow', tags: ['conversation-flows'], summary: 'Delete a conversation flow (refused with 409 while an agent uses it)', params: FlowIdParam, response: deleted }),
    }, async (request, reply) => {
      await agents.deleteFlow(request.principal.accountId, request.params.conversation_flow_id);
      return reply.code(204).send(null);
    });

    // --- service LLMs, at our paths and at Retell's (`/create-retell-llm`, ...: the SDK's `llm.*`)
    for (const [prefix, noun] of [['service-llm', 'ServiceLlm'], ['retell-llm', 'RetellLlm']] as const) {
      const alias = prefix === 'retell-llm' ? " (Retell's path)" : '';
      app.post(`/create-${prefix}`, {
        schema: operation({ operationId: `create${noun}`, tags: ['service-llms'], summary: `Create a service LLM${alias}`, body: ServiceLlmCreateBody, response: { 201: ServiceLlmResponse, ...authErrors } }),
      }, async (request, reply) => reply.code(201).send(await agents.createLlm(request.principal.accountId, request.body)));

      app.get(`/get-${prefix}/:llm_id`, {
        schema: operation({ operationId: `get${noun}`, tags: ['service-llms'], summary: `Get a service LLM${alias}`, params: LlmIdParam, response: { 200: ServiceLlmResponse, ...authErrors } }),
      }, async (request) => agents.getLlm(request.principal.accountId, request.params.llm_id));

      app.patch(`/update-${prefix}/:llm_id`, {
        schema: operation({ operationId: `update${noun}`, tags: ['service-llms'], summary: `Update a service LLM${alias}`, params: LlmIdParam, body: ServiceLlmUpdateBody, response: { 200: ServiceLlmResponse, ...authErrors } }),
      }, async (request) => agents.updateLlm(request.principal.accountId, request.params.llm_id, request.body));

      app.get(`/list-${prefix}s`, {
        schema: operation({ operationId: `list${noun}s`, tags: ['service-llms'], summary: `List service LLMs${alias}`, response: { 200: Type.Array(ServiceLlmResponse), 401: authErrors[401] } }),
      }, async (request) => agents.listLlms(request.principal.accountId));

      app.delete(`/delete-${prefix}/:llm_id`, {
        schema: operation({ operationId: `delete${noun}`, tags: ['service-llms'], summary: `Delete a service LLM (refused with 409 while an agent uses it)${alias}`, params: LlmIdParam, response: deleted }),
      }, async (request, reply) => {
        await agents.deleteLlm(request.principal.accountId, request.params.llm_id);
        return reply.code(204).send(null);
      });
    }

    // --- agents
    app.post('/create-agent', {
      schema: operation({ operationId: 'createAgent', tags: ['agents'], summary: 'Create an agent (version 1)', body: AgentCreateBody, response: { 201: AgentResponse, ...authErrors } }),
    }, async (request, reply) => reply.code(201).send(await agents.createAgent(request.principal.accountId, request.body)));

    app.get('/get-agent/:agent_id', {
      schema: operation({ operationId: 'getAgent', tags: ['agents'], summary: 'Get an agent (latest version, or ?version=N)', params: AgentIdParam, querystring: VersionQuery, response: { 200: AgentResponse, ...authErrors } }),
    }, async (request) => {
      const version = request.query.version === undefined ? undefined : Number(request.query.version);
      return agents.getAgent(request.principal.accountId, request.params.agent_id, version);
    });

    app.get('/list-agents', {
      schema: operation({ operationId: 'listAgents', tags: ['agents'], summary: 'List agents (latest versions)', response: { 200: Type.Array(AgentResponse), 401: authErrors[401] } }),
    }, async (request) => agents.listAgents(request.principal.accountId));

    app.patch('/update-agent/:agent_id', {
      schema: operation({ operationId: 'updateAgent', tags: ['agents'], summary: 'Update an agent: makes the next version', params: AgentIdParam, body: AgentUpdateBody, response: { 200: AgentResponse, ...authErrors } }),
    }, async (request) => agents.updateAgent(request.principal.accountId, request.params.agent_id, request.body));

    app.delete('/delete-agent/:agent_id', {
      schema: operation({ operationId: 'deleteAgent', tags: ['agents'], summary: 'Delete an agent and its versions (its calls stay)', params: AgentIdParam, response: { 204: Type.Null(), ...authErrors } }),
    }, async (request, reply) => {
      await agents.deleteAgent(request.principal.accountId, request.params.agent_id);
      return reply.code(204).send(null);
    });

    app.get('/get-agent-versions/:agent_id', {
      schema: operation({ operationId: 'getAgentVersions', tags: ['agents'], summary: 'Every version of an agent, oldest first', params: AgentIdParam, response: { 200: Type.Array(AgentResponse), ...authErrors } }),
    }, async (request) => agents.listVersions(request.principal.accountId, request.params.agent_id));

    // --- Retell's version operations (the SDK's agent.createVersion and agent.publish; agent.listVersions is paged: paged.routes.ts)
    app.post('/create-agent-version/:agent_id', {
      schema: operation({ operationId: 'createAgentVersion', tags: ['agents'], summary: 'Make the next version a copy of `base_version` (its settings and pinned engine)', params: AgentIdParam, body: CreateAgentVersionBody, response: { 201: AgentResponse, ...authErrors } }),
    }, async (request, reply) => reply.code(201).send(await agents.createVersion(request.principal.accountId, request.params.agent_id, request.body.base_version)));

    app.post('/publish-agent-version/:agent_id', {
      schema: operation({ operationId: 'publishAgentVersion', tags: ['agents'], summary: 'Mark a version published, with a title and description (versions are immutable already)', params: AgentIdParam, body: PublishAgentVersionBody, response: { 204: Type.Null(), ...authErrors } }),
    }, async (request, reply) => {
      await agents.publishVersion(request.principal.accountId, request.params.agent_id, request.body);
      return reply.code(204).send(null);
    });

  };
}
