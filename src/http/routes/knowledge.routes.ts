import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { KnowledgeBaseCreateBody, KnowledgeSearchBody, KnowledgeSourcesAddBody } from '../../domain/knowledge-base.ts';
import { KnowledgeBaseResponse, KnowledgeSearchResponse, type KnowledgeService } from '../../services/knowledge.service.ts';
import { ErrorResponse, PathId, authErrors } from '../schemas/common.schemas.ts';
import { operation } from '../openapi.ts';

const BaseIdParam = Type.Object({ knowledge_base_id: PathId });
const SourceParams = Type.Object({ knowledge_base_id: PathId, source_id: PathId });
/** Writes that may meet a bound: 409 at a count limit, 413 for a source too large. */
const bounded = { ...authErrors, 409: ErrorResponse, 413: ErrorResponse };

/** Knowledge bases in Retell's path style (docs/knowledge-bases.md). */
export function knowledgeRoutes(knowledge: KnowledgeService): FastifyPluginAsyncTypebox {
  return async (app) => {
    const tags = ['knowledge-bases'] as const satisfies ['knowledge-bases'];
    app.post('/create-knowledge-base', {
      schema: operation({
        operationId: 'createKnowledgeBase',
        tags,
        summary: 'Create a knowledge base from texts, files and URLs (ingested in the background: status in_progress)',
        body: KnowledgeBaseCreateBody,
        response: { 201: KnowledgeBaseResponse, ...bounded },
      }),
    }, async (request, reply) => reply.code(201).send(await knowledge.createKnowledgeBase(request.principal.accountId, request.body)));

    app.get('/get-knowledge-base/:knowledge_base_id', {
      schema: operation({ operationId: 'getKnowledgeBase', tags, summary: 'Get a knowledge base with its sources and their status', params: BaseIdParam, response: { 200: KnowledgeBaseResponse, ...authErrors } }),
    }, async (request) => knowledge.getKnowledgeBase(request.principal.accountId, request.params.knowledge_base_id));

    app.get('/list-knowledge-bases', {
      schema: operation({ operationId: 'listKnowledgeBases', tags, summary: 'List knowledge bases, oldest first', response: { 200: Type.Array(KnowledgeBaseResponse), 401: authErrors[401] } }),
    }, async (request) => knowledge.listKnowledgeBases(request.principal.accountId));

    app.delete('/delete-knowledge-base/:knowledge_base_id', {
      schema: operation({ operationId: 'deleteKnowledgeBase', tags, summary: 'Delete a knowledge base, its sources and chunks', params: BaseIdParam, response: { 204: Type.Null(), ...authErrors } }),
    }, async (request, reply) => {
      await knowledge.deleteKnowledgeBase(request.principal.accountId, request.params.knowledge_base_id);
      return reply.code(204).send(null);
    });

    app.post('/add-knowledge-base-sources/:knowledge_base_id', {
      schema: operation({ operationId: 'addKnowledgeBaseSources', tags, summary: 'Add texts, files and URLs to a knowledge base', params: BaseIdParam, body: KnowledgeSourcesAddBody, response: { 200: KnowledgeBaseResponse, ...bounded } }),
    }, async (request) => knowledge.addSources(request.principal.accountId, request.params.knowledge_base_id, request.body));

    app.delete('/delete-knowledge-base-source/:knowledge_base_id/source/:source_id', {
      schema: operation({ operationId: 'deleteKnowledgeBaseSource', tags, summary: 'Delete one source and its chunks', params: SourceParams, response: { 200: KnowledgeBaseResponse, ...authErrors } }),
    }, async (request) => knowledge.deleteSource(request.principal.accountId, request.params.knowledge_base_id, request.params.source_id));

    app.post('/search-knowledge-base/:knowledge_base_id', {
      schema: operation({
        operationId: 'searchKnowledgeBase',
        tags,
        summary: 'The chunks a call would retrieve for a query, best first',
        params: BaseIdParam,
        body: KnowledgeSearchBody,
        response: { 200: KnowledgeSearchResponse, ...authErrors },
      }),
    }, async (request) => knowledge.search(request.principal.accountId, request.params.knowledge_base_id, request.body));
  };
}
