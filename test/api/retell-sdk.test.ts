/**
 * Drop-in use of Retell's own TypeScript SDK (retell-sdk 5) against a real listening server, on
 * both stores: every operation the two APIs share, with the paths, methods, bodies and status
 * handling the SDK really uses (read from node_modules/retell-sdk/src/resources). Request bodies
 * follow our contract where the engines differ (a flow's nodes), hence the casts.
 */
import assert from 'node:assert/strict';
import type net from 'node:net';
import { after, before, describe, it } from 'node:test';
import Retell from 'retell-sdk';
import { type Harness, sampleFlow, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

/** The SDK's types describe Retell's objects; ours are read as plain JSON. */
type Json = Record<string, any>;
const json = (value: unknown) => value as Json;

for (const kind of STORES) {
  describe(`Retell's SDK against the server on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let retell: Retell;
    let apiKey: string;
    /** Every request the SDK sent, as "METHOD path". */
    const sent: string[] = [];

    before(async () => {
      h = await startHarness(kind.name, { LLM_BASE_URL: 'http://127.0.0.1:9/v1' });
      ({ apiKey } = await h.account());
      await h.app.listen({ port: 0, host: '127.0.0.1' });
      const baseURL = `http://127.0.0.1:${(h.app.server.address() as net.AddressInfo).port}`;
      const countingFetch: typeof fetch = async (input, init) => {
        const url = new URL(input instanceof Request ? input.url : String(input));
        sent.push(`${init?.method ?? 'GET'} ${url.pathname}`);
        return fetch(input, init);
      };
      retell = new Retell({ apiKey, baseURL, fetch: countingFetch });
    });
    after(() => h?.close());

    it('conversation flows: create, retrieve, list, update, delete', async () => {
      const created = json(await retell.conversationFlow.create(sampleFlow() as never));
      assert.match(created.conversation_flow_id, /^cf_/);
      const id: string = created.conversation_flow_id;
      assert.equal(json(await retell.conversationFlow.retrieve(id)).start_node_id, 'greet');
      const updated = json(await retell.conversationFlow.update(id, { global_prompt: 'Be kind.' }));
      assert.equal(updated.global_prompt, 'Be kind.');

      const other = json(await retell.conversationFlow.create(sampleFlow() as never));
      const page = await retell.conversationFlow.list();
      assert.deepEqual(page.items.map((f) => f.conversation_flow_id), [other.conversation_flow_id, id], 'newest first');
      assert.equal(page.has_more, false);
      const first = await retell.conversationFlow.list({ limit: 1, sort_order: 'ascending' });
      assert.deepEqual([first.items.map((f) => f.conversation_flow_id), first.has_more, first.pagination_key], [[id], true, id]);
      const second = await retell.conversationFlow.list({ limit: 1, sort_order: 'ascending', pagination_key: first.pagination_key });
      assert.deepEqual([second.items.map((f) => f.conversation_flow_id), second.has_more], [[other.conversation_flow_id], false]);

      assert.equal(await retell.conversationFlow.delete(other.conversation_flow_id), null, '204: the SDK resolves null');
      await assert.rejects(retell.conversationFlow.retrieve(other.conversation_flow_id), (error: unknown) => error instanceof Retell.UnprocessableEntityError);
    });

    it("agents: create (with Retell's engine types), retrieve, list, update, getVersions, delete", async () => {
      const flow = json(await retell.conversationFlow.create(sampleFlow() as never));
      const llm = (await h.request({ method: 'POST', url: '/create-service-llm', key: apiKey, body: { general_prompt: 'Be brief.' } })).json;
      const agent = json(
        await retell.agent.create({ agent_name: 'Reception', voice_id: 'flite-kal16', response_engine: { type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id } }),
      );
      assert.deepEqual(agent.response_engine, { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id }, 'our spelling back');
      const id: string = agent.agent_id;
      assert.equal(json(await retell.agent.retrieve(id)).version, 1);

      const updated = json(await retell.agent.update(id, { agent_name: 'Front desk', response_engine: { type: 'retell-llm', llm_id: llm.llm_id } }));
      assert.equal(updated.version, 2);
      assert.deepEqual(updated.response_engine, { type: 'service_llm', llm_id: llm.llm_id });
      assert.equal(json(await retell.agent.retrieve(id, { version: 1 })).agent_name, 'Reception');
      assert.deepEqual((await retell.agent.getVersions(id)).map((v) => json(v).version), [1, 2]);

      const page = await retell.agent.list();
      assert.ok(page.items.some((a) => a.agent_id === id));
      assert.equal(page.has_more, false);
      const found = await retell.agent.list({ filter_criteria: { query: 'front' } });
      assert.deepEqual(found.items.map((a) => a.agent_id), [id]);
      assert.deepEqual((await retell.agent.list({ filter_criteria: { query: 'nobody' } })).items, []);

      assert.equal(await retell.agent.delete(id), null);
      await assert.rejects(retell.agent.retrieve(id), (error: unknown) => error instanceof Retell.UnprocessableEntityError && error.status === 422);
    });

    it("retell LLMs (llm.*): create, retrieve, update, list, delete, Retell's fields accepted and reported", async () => {
      const created = json(
        await retell.llm.create({
          general_prompt: 'Be brief.',
          begin_message: 'Hello.',
          general_tools: [{ type: 'end_call', name: 'end_call', description: 'Hang up.' }],
          tool_call_strict_mode: true,
          model_high_priority: true,
        }),
      );
      assert.match(created.llm_id, /^llm_/);
      const id: string = created.llm_id;
      assert.equal(created.tool_call_strict_mode, true);
      assert.deepEqual(created.general_tools, [{ type: 'end_call', name: 'end_call', description: 'Hang up.' }]);
      assert.deepEqual(created.accepted_without_effect, ['model_high_priority'], 'the answer says which fields change nothing here');
      assert.equal(json(await retell.llm.retrieve(id)).begin_message, 'Hello.');
      const updated = json(await retell.llm.update(id, { general_prompt: 'Be kind.', model_high_priority: false }));
      assert.deepEqual([updated.general_prompt, updated.accepted_without_effect], ['Be kind.', []]);
      assert.equal((await h.request({ method: 'GET', url: `/get-service-llm/${id}`, key: apiKey })).json.general_prompt, 'Be kind.', 'one resource under both names');

      const other = json(await retell.llm.create({ general_prompt: 'Other.' }));
      const page = await retell.llm.list();
      assert.deepEqual(page.items.slice(0, 2).map((l) => l.llm_id), [other.llm_id, id], 'newest first');
      const first = await retell.llm.list({ limit: 1, sort_order: 'ascending' });
      assert.equal(first.has_more, true);

      // Retell's transfer_call tool (phone calls, issue 24): a cold transfer to a predefined number is taken as it is.
      const transfer = { type: 'transfer_call', name: 'transfer', transfer_destination: { type: 'predefined', number: '+14155550100' }, transfer_option: { type: 'cold_transfer' } };
      assert.deepEqual(json(await retell.llm.create({ general_tools: [transfer] } as never)).general_tools, [transfer]);
      await assert.rejects(
        retell.llm.create({ general_tools: [{ ...transfer, transfer_destination: { type: 'predefined', number: '555 0100' } }] } as never),
        (error: unknown) => error instanceof Retell.BadRequestError && /general_tools/.test(error.message),
      );
      assert.equal(await retell.llm.delete(other.llm_id), null);
      await assert.rejects(retell.llm.retrieve(other.llm_id), (error: unknown) => error instanceof Retell.UnprocessableEntityError);
    });

    it('calls: createWebCall, retrieve, list, update, delete', async () => {
      const flow = json(await retell.conversationFlow.create(sampleFlow() as never));
      const agent = json(await retell.agent.create({ voice_id: 'flite-kal16', response_engine: { type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id } }));
      const created = json(await retell.call.createWebCall({ agent_id: agent.agent_id, metadata: { order: 42 }, retell_llm_dynamic_variables: { name: 'Ada' } }));
      assert.match(created.call_id, /^call_/);
      assert.equal(typeof created.access_token, 'string', 'the token the browser SDK joins with');
      assert.deepEqual(created.service_llm_dynamic_variables, { name: 'Ada' });
      const id: string = created.call_id;

      const got = json(await retell.call.retrieve(id));
      assert.equal(got.call_status, 'registered');
      assert.equal(got.access_token, undefined, 'the token is only in the creation response');
      const updated = json(await retell.call.update(id, { metadata: { order: 43 }, data_storage_setting: 'everything_except_pii' }));
      assert.deepEqual([updated.metadata, updated.data_storage_setting], [{ order: 43 }, 'everything_except_pii']);

      const second = json(await retell.call.createWebCall({ agent_id: agent.agent_id }));
      const page = await retell.call.list();
      assert.deepEqual(page.items.slice(0, 2).map((c) => c.call_id), [second.call_id, id], 'newest first');
      const first = await retell.call.list({ limit: 1, sort_order: 'ascending' });
      assert.equal(first.has_more, true);
      const next = await retell.call.list({ limit: 1, sort_order: 'ascending', pagination_key: first.pagination_key });
      assert.notEqual(next.items[0]?.call_id, first.items[0]?.call_id);
      const filtered = await retell.call.list({ filter_criteria: { agent_id: [agent.agent_id] } } as never);
      assert.deepEqual(filtered.items.map((c) => c.call_id).sort(), [id, second.call_id].sort());

      assert.equal(await retell.call.delete(id), null);
      await assert.rejects(retell.call.retrieve(id), (error: unknown) => error instanceof Retell.UnprocessableEntityError);
    });

    it("maps our errors to the SDK's error classes, and a permanent 409 is not retried", async () => {
      const bad = new Retell({ apiKey: `sb_${'A'.repeat(43)}`, baseURL: retell.baseURL, maxRetries: 2 });
      await assert.rejects(bad.agent.getVersions('agent_x'), (error: unknown) => error instanceof Retell.AuthenticationError);
      await assert.rejects(retell.call.createWebCall({ agent_id: 'has space' }), (error: unknown) => error instanceof Retell.BadRequestError);

      const flow = json(await retell.conversationFlow.create(sampleFlow() as never));
      await retell.agent.create({ voice_id: 'flite-kal16', response_engine: { type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id } });
      sent.length = 0;
      await assert.rejects(retell.conversationFlow.delete(flow.conversation_flow_id), (error: unknown) => error instanceof Retell.ConflictError);
      assert.deepEqual(sent, [`DELETE /delete-conversation-flow/${flow.conversation_flow_id}`], 'x-should-retry: false stops the SDK retrying a 409');
    });
  });
}
