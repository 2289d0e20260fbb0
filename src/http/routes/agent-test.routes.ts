import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { TEST_RUN_STATUSES, TestCaseCreateBody, TestCaseUpdateBody, TestRunCreateBody } from '../../domain/agent-test.ts';
import type { AgentTestService } from '../../services/agent-test.service.ts';
import { PathId, authErrors } from '../schemas/common.schemas.ts';
import { operation } from '../openapi.ts';

const CaseIdParam = Type.Object({ test_case_id: PathId });
const RunIdParam = Type.Object({ test_run_id: PathId });
const AgentQuery = Type.Object({ agent_id: Type.Optional(PathId) }, { additionalProperties: false });
const AgentRequiredQuery = Type.Object({ agent_id: PathId }, { additionalProperties: false });

/** A case as stored, with its defaults filled in (the request's fields and these). */
const TestCaseResponse = Type.Object(
  {
    test_case_id: Type.String(),
    agent_id: Type.String(),
    name: Type.String(),
    mode: Type.String({ enum: ['text', 'audio'] }),
    created_at: Type.Integer({ description: 'Epoch milliseconds.' }),
    last_modification_timestamp: Type.Integer({ description: 'Epoch milliseconds.' }),
  },
  { title: 'TestCase', additionalProperties: true },
);

/** A run: its status and counts, and each case's result (docs/testing-agents.md, "Results"). */
const TestRunResponse = Type.Object(
  {
    test_run_id: Type.String(),
    agent_id: Type.String(),
    agent_version: Type.Union([Type.Integer(), Type.Null()]),
    status: Type.String({ enum: [...TEST_RUN_STATUSES] }),
    test_case_ids: Type.Array(Type.String()),
    passed: Type.Integer(),
    failed: Type.Integer(),
    results: Type.Array(Type.Object({ test_case_id: Type.String(), passed: Type.Boolean() }, { additionalProperties: true })),
    created_at: Type.Integer({ description: 'Epoch milliseconds.' }),
    finished_at: Type.Union([Type.Integer(), Type.Null()]),
  },
  { title: 'TestRun' },
);

/** Agent tests (issue 28): test cases and test runs, in the path style of the agent operations. */
export function agentTestRoutes(tests: AgentTestService): FastifyPluginAsyncTypebox {
  return async (app) => {
    const tags = ['tests'] as const satisfies ['tests'];
    app.post('/create-test-case', {
      schema: operation({ operationId: 'createTestCase', tags, summary: 'Create a test case of an agent', body: TestCaseCreateBody, response: { 201: TestCaseResponse, ...authErrors } }),
    }, async (request, reply) => reply.code(201).send(await tests.createCase(request.principal.accountId, request.body)));

    app.get('/get-test-case/:test_case_id', {
      schema: operation({ operationId: 'getTestCase', tags, summary: 'Get a test case', params: CaseIdParam, response: { 200: TestCaseResponse, ...authErrors } }),
    }, async (request) => tests.getCase(request.principal.accountId, request.params.test_case_id));

    app.get('/list-test-cases', {
      schema: operation({ operationId: 'listTestCases', tags, summary: 'List test cases (of one agent with ?agent_id=)', querystring: AgentQuery, response: { 200: Type.Array(TestCaseResponse), ...authErrors } }),
    }, async (request) => tests.listCases(request.principal.accountId, request.query.agent_id));

    app.patch('/update-test-case/:test_case_id', {
      schema: operation({ operationId: 'updateTestCase', tags, summary: 'Update a test case (fields given replace the stored ones)', params: CaseIdParam, body: TestCaseUpdateBody, response: { 200: TestCaseResponse, ...authErrors } }),
    }, async (request) => tests.updateCase(request.principal.accountId, request.params.test_case_id, request.body));

    app.delete('/delete-test-case/:test_case_id', {
      schema: operation({ operationId: 'deleteTestCase', tags, summary: 'Delete a test case (runs keep its results)', params: CaseIdParam, response: { 204: Type.Null(), ...authErrors } }),
    }, async (request, reply) => {
      await tests.deleteCase(request.principal.accountId, request.params.test_case_id);
      return reply.code(204).send(null);
    });

    app.post('/create-test-run', {
      schema: operation({
        operationId: 'createTestRun',
        tags,
        summary: "Run an agent's test cases (answers at once; test_run.finished when done)",
        body: TestRunCreateBody,
        response: { 201: Type.Object({ test_run_id: Type.String(), status: Type.Literal('running') }, { title: 'TestRunStarted' }), ...authErrors },
      }),
    }, async (request, reply) => reply.code(201).send(await tests.createRun(request.principal.accountId, request.body)));

    app.get('/get-test-run/:test_run_id', {
      schema: operation({ operationId: 'getTestRun', tags, summary: "A test run's status and each case's result", params: RunIdParam, response: { 200: TestRunResponse, ...authErrors } }),
    }, async (request) => tests.getRun(request.principal.accountId, request.params.test_run_id));

    app.get('/list-test-runs', {
      schema: operation({ operationId: 'listTestRuns', tags, summary: "An agent's test runs, newest first (without results)", querystring: AgentRequiredQuery, response: { 200: Type.Array(TestRunResponse), ...authErrors } }),
    }, async (request) => tests.listRuns(request.principal.accountId, request.query.agent_id));
  };
}
