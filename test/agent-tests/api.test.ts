// Agent tests through the API, on both stores: test cases (CRUD, validation naming the field),
// every assertion kind passing and failing, mocked functions with their arguments, an interrupted
// agent, keys pressed, and a simulated call that leaves no trace among the account's calls,
// leads, tickets or webhooks (only the run's own test_run.finished).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { docBlocks, flowAgent, runToEnd } from './helpers.ts';

const [FLOW] = docBlocks('flow');
const ORDER_SCRIPT = { script: [{ dtmf: '1' }, { say: 'it is five five five one two three four' }] };
const MOCK = { lookup_order: { response: { order: { status: 'shipped' } }, delay_ms: 300 } };

/** One assertion of each kind that the order case meets, and one of each that it does not. */
const PASSING = [
  { type: 'node_reached', node_id: 'tell' },
  { type: 'node_path', node_ids: ['greet', 'lookup', 'tell'] },
  { type: 'tool_called', name: 'lookup_order', args: { order_id: '5551234' } },
  { type: 'tool_not_called', name: 'cancel_order' },
  { type: 'variable_equals', name: 'order_status', value: 'shipped' },
  { type: 'transcript_contains', role: 'agent', text: 'ORDER HAS SHIPPED' },
  { type: 'transcript_matches', role: 'user', pattern: 'five( five)+' },
  { type: 'call_successful', value: true },
  { type: 'disconnection_reason', value: 'agent_hangup' },
  { type: 'max_turns', value: 3 },
  { type: 'latency_e2e_p90_below_ms', value: 5_000 },
];
const FAILING = [
  { type: 'node_reached', node_id: 'sorry' },
  { type: 'node_path', node_ids: ['tell', 'greet'] },
  { type: 'tool_called', name: 'lookup_order', args: { order_id: '999' } },
  { type: 'tool_not_called', name: 'lookup_order' },
  { type: 'variable_equals', name: 'order_status', value: 'lost' },
  { type: 'transcript_contains', role: 'user', text: 'shipped' },
  { type: 'transcript_matches', role: 'agent', pattern: '^refund' },
  { type: 'call_successful', value: false },
  { type: 'disconnection_reason', value: 'user_hangup' },
  { type: 'max_turns', value: 2 },
  { type: 'latency_e2e_p90_below_ms', value: 200 },
];

for (const kind of STORES) {
  describe(`agent tests through the API (${kind.name})`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let agentId: string;
    before(async () => {
      h = await startHarness(kind.name);
      key = (await h.account()).apiKey;
      agentId = await flowAgent(h, key, FLOW);
    });
    after(async () => h?.close());
    const req = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown, k = key) => h.request({ method, url, key: k, body });

    it('creates, reads, lists by agent, updates and deletes cases; other accounts see none', async () => {
      const created = await req('POST', '/create-test-case', { agent_id: agentId, caller: ORDER_SCRIPT, assertions: [] });
      assert.equal(created.status, 201, created.raw);
      assert.match(created.json.test_case_id, /^test_[0-9a-f]{32}$/);
      assert.equal(created.json.mode, 'text');
      assert.equal(created.json.name, 'Test case');
      const id = created.json.test_case_id;
      assert.deepEqual((await req('GET', `/get-test-case/${id}`)).json, created.json);
      assert.deepEqual((await req('GET', `/list-test-cases?agent_id=${agentId}`)).json.map((c: any) => c.test_case_id), [id]);
      assert.deepEqual((await req('GET', '/list-test-cases?agent_id=agent_other')).json, []);
      const updated = await req('PATCH', `/update-test-case/${id}`, { name: 'renamed', tool_mocks: MOCK });
      assert.equal(updated.status, 200, updated.raw);
      assert.equal(updated.json.name, 'renamed');
      assert.deepEqual(updated.json.tool_mocks, MOCK);
      const other = (await h.account()).apiKey;
      assert.equal((await req('GET', `/get-test-case/${id}`, undefined, other)).status, 422);
      assert.deepEqual((await req('GET', '/list-test-cases', undefined, other)).json, []);
      assert.equal((await req('DELETE', `/delete-test-case/${id}`)).status, 204);
      assert.equal((await req('GET', `/get-test-case/${id}`)).json.code, 'test_case_not_found');
    });

    it('refuses bad cases and runs with a 400 naming the field, and stores nothing', async () => {
      const bad = [
        [{ caller: ORDER_SCRIPT, assertions: [] }, 'agent_id'],
        [{ agent_id: agentId, caller: { script: [{ shout: 'hi' }] }, assertions: [] }, 'caller'],
        [{ agent_id: agentId, caller: ORDER_SCRIPT, assertions: [{ type: 'node_reached' }] }, 'assertions'],
        [{ agent_id: agentId, caller: ORDER_SCRIPT, assertions: [{ type: 'transcript_matches', pattern: '(a+)+$' }] }, 'assertions.0.pattern'],
        [{ agent_id: agentId, caller: ORDER_SCRIPT, assertions: [{ type: 'transcript_matches', pattern: '(a)\\1' }] }, 'assertions.0.pattern'],
        [{ agent_id: agentId, caller: ORDER_SCRIPT, assertions: [{ type: 'transcript_matches', pattern: '(' }] }, 'assertions.0.pattern'],
        [{ agent_id: agentId, caller: ORDER_SCRIPT, tool_mocks: { lookup_order: { status: 99 } }, assertions: [] }, 'tool_mocks'],
        [{ agent_id: agentId, caller: ORDER_SCRIPT, mode: 'video', assertions: [] }, 'mode'],
      ] as const;
      const before = (await req('GET', '/list-test-cases')).json.length;
      for (const [body, field] of bad) {
        const answer = await req('POST', '/create-test-case', body);
        assert.equal(answer.status, 400, `${JSON.stringify(body)}: ${answer.raw}`);
        assert.ok(answer.json.message.includes(field), `${answer.json.message} names ${field}`);
      }
      assert.equal((await req('POST', '/create-test-case', { agent_id: 'agent_missing', caller: ORDER_SCRIPT, assertions: [] })).json.code, 'agent_not_found');
      assert.equal((await req('GET', '/list-test-cases')).json.length, before);
      const noCases = await flowAgent(h, key, FLOW);
      const run = await req('POST', '/create-test-run', { agent_id: noCases });
      assert.equal(run.status, 400);
      assert.match(run.json.message, /agent_id/);
      const foreign = await req('POST', '/create-test-run', { agent_id: noCases, test_case_ids: ['test_00000000000000000000000000000000'] });
      assert.equal(foreign.status, 400);
      assert.match(foreign.json.message, /test_case_ids\.0/);
    });

    it('judges every assertion kind: each passes on the call that meets it and fails, saying what happened, on the one that does not', async () => {
      const passing = await req('POST', '/create-test-case', { agent_id: agentId, name: 'passing', caller: ORDER_SCRIPT, tool_mocks: MOCK, assertions: [...PASSING, { type: 'llm_judge', criterion: 'The agent was polite.' }] });
      const failing = await req('POST', '/create-test-case', { agent_id: agentId, name: 'failing', caller: ORDER_SCRIPT, tool_mocks: MOCK, assertions: FAILING });
      const run = await runToEnd(h, key, { agent_id: agentId, test_case_ids: [passing.json.test_case_id, failing.json.test_case_id] });
      assert.equal(run.status, 'complete');
      assert.deepEqual([run.passed, run.failed], [1, 1]);
      const [good, bad] = run.results;
      for (const [i, a] of PASSING.entries()) assert.equal(good.assertions[i].passed, true, `${a.type}: ${JSON.stringify(good.assertions[i])}`);
      // Without an LLM, llm_judge is skipped, never passed; the case still passes on the others.
      assert.deepEqual({ ...good.assertions[PASSING.length], detail: undefined }, { type: 'llm_judge', passed: false, skipped: true, expected: { criterion: 'The agent was polite.' }, actual: null, detail: undefined });
      assert.equal(good.passed, true);
      for (const [i, a] of FAILING.entries()) {
        assert.equal(bad.assertions[i].passed, false, `${a.type}: ${JSON.stringify(bad.assertions[i])}`);
        assert.equal(bad.assertions[i].type, a.type);
      }
      assert.deepEqual(bad.assertions[2].actual, [{ name: 'lookup_order', args: { order_id: '5551234' } }]);
      assert.deepEqual(bad.assertions[4].actual, { order_status: 'shipped' });
      assert.equal(bad.assertions[8].actual, 'agent_hangup');
      assert.deepEqual(bad.assertions[10].actual, { p90_ms: bad.latency.e2e_p90_ms });
      // The mocked function's arguments and answer, and its delay counted in the latency.
      assert.deepEqual(good.tool_calls, [{ name: 'lookup_order', arguments: { order_id: '5551234' }, result: '{"order":{"status":"shipped"}}', mocked: true, ok: true }]);
      assert.ok(good.latency.values_ms.some((ms: number) => ms >= 300), JSON.stringify(good.latency));
      assert.deepEqual(good.transcript.map((u: any) => `${u.role}: ${u.content}`), [
        'agent: Welcome to Acme. Say orders or sales, or press 1 for orders.',
        'user: 1',
        'agent: What is your order number?',
        'user: it is five five five one two three four',
        'agent: Your order has shipped. Goodbye.',
      ]);
      const history = await req('GET', `/list-test-runs?agent_id=${agentId}`);
      assert.equal(history.json[0].test_run_id, run.test_run_id);
      assert.deepEqual(history.json[0].results, []);
    });

    it('an interrupted agent: the reply is cut off where the caller spoke over it, and the engine hears that', async () => {
      const flow = {
        start_node_id: 'talk',
        nodes: [
          {
            id: 'talk', type: 'conversation', instruction: { type: 'static_text', text: 'Let me tell you about all of our many wonderful plans today.' },
            edges: [{ id: 'stop', destination_node_id: 'bye', transition_condition: { type: 'keyword', keywords: ['stop'] } }],
          },
          { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Alright, goodbye.' } },
        ],
      };
      const agent = await flowAgent(h, key, flow);
      await req('POST', '/create-test-case', {
        agent_id: agent,
        caller: { script: [{ interrupt: 'stop please', after_words: 3 }] },
        assertions: [{ type: 'transcript_contains', role: 'agent', text: 'wonderful' }, { type: 'node_reached', node_id: 'bye' }],
      });
      const run = await runToEnd(h, key, { agent_id: agent });
      const [result] = run.results;
      assert.deepEqual(result.transcript[0], { role: 'agent', content: 'Let me tell', cut_off: true });
      assert.deepEqual(result.assertions.map((a: any) => a.passed), [false, true]);
    });

    it('an unmocked function is refused unless the case allows it; the flow takes its failure path', async () => {
      await req('POST', '/create-test-case', { agent_id: agentId, caller: ORDER_SCRIPT, assertions: [{ type: 'node_reached', node_id: 'sorry' }] });
      const cases = (await req('GET', `/list-test-cases?agent_id=${agentId}`)).json;
      const last = cases[cases.length - 1].test_case_id;
      const run = await runToEnd(h, key, { agent_id: agentId, test_case_ids: [last] });
      const [result] = run.results;
      assert.equal(result.passed, true, JSON.stringify(result.assertions));
      assert.equal(result.tool_calls[0].mocked, false);
      assert.equal(result.tool_calls[0].ok, false);
      assert.match(result.tool_calls[0].result, /not mocked/);
    });

    it('a simulated call leaves no call, lead, ticket or webhook delivery but the run\'s own test_run.finished', async () => {
      const hook = await req('POST', '/api/v1/webhooks/set.php', { url: 'https://hooks.example.com/all', events: ['*'] });
      assert.ok(hook.status === 200 || hook.status === 201, hook.raw);
      const ticketFlow = {
        start_node_id: 'hi',
        nodes: [
          { id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'What is wrong?' }, edges: [{ id: 'e', destination_node_id: 't', transition_condition: { type: 'always' } }] },
          { id: 't', type: 'create_ticket', edges: [{ id: 'f', destination_node_id: 'bye', transition_condition: { type: 'always' } }] },
          { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'A ticket is open. Bye.' } },
        ],
      };
      const agent = await flowAgent(h, key, ticketFlow);
      await req('POST', '/create-test-case', { agent_id: agent, caller: { script: [{ say: 'my router is broken' }] }, assertions: [{ type: 'node_reached', node_id: 'bye' }] });
      const leadCase = await req('POST', '/create-test-case', { agent_id: agentId, caller: { script: [{ say: 'sales' }, { say: 'my name is ada' }] }, assertions: [] });
      const run = await runToEnd(h, key, { agent_id: agent });
      await runToEnd(h, key, { agent_id: agentId, test_case_ids: [leadCase.json.test_case_id] });
      assert.equal(run.results[0].tickets.length, 1);
      assert.deepEqual((await req('GET', '/api/v1/tickets/list.php')).json.tickets, []);
      assert.deepEqual((await req('GET', '/api/v1/leads/list.php')).json.leads, []);
      assert.deepEqual((await req('POST', '/v2/list-calls', {})).json, []);
      const db = h.runtime.store.db;
      const account = (await db.selectFrom('api_keys').select('account_id').executeTakeFirstOrThrow()).account_id;
      const kinds = await db.selectFrom('webhook_events').select('kind').where('account_id', '=', account).execute();
      assert.ok(kinds.length >= 2 && kinds.every((k) => k.kind === 'test_run.finished'), JSON.stringify(kinds));
      const deliveries = await db.selectFrom('webhook_deliveries').select(['kind', 'url']).where('account_id', '=', account).execute();
      assert.ok(deliveries.length >= 2 && deliveries.every((d) => d.kind === 'test_run.finished'), JSON.stringify(deliveries));
    });
  });
}
