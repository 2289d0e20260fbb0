import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, sampleFlow, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

for (const kind of STORES) {
  describe(`agents and response engines on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    before(async () => {
      h = await startHarness(kind.name);
      ({ apiKey: key } = await h.account());
    });
    after(() => h.close());
    const req = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) => h.request({ method, url, key, body });

    it('creates, reads, updates, lists and deletes a conversation flow', async () => {
      const created = await req('POST', '/create-conversation-flow', sampleFlow());
      assert.equal(created.status, 201);
      const id = created.json.conversation_flow_id;
      assert.match(id, /^cf_/);
      assert.equal(created.json.nodes.length, 3);
      assert.equal((await req('GET', `/get-conversation-flow/${id}`)).json.start_node_id, 'greet');
      h.clock.advance(1000);
      const updated = await req('PATCH', `/update-conversation-flow/${id}`, { global_prompt: 'Be brief.' });
      assert.equal(updated.status, 200);
      assert.equal(updated.json.global_prompt, 'Be brief.');
      assert.equal(updated.json.nodes.length, 3, 'unchanged fields stay');
      assert.ok(updated.json.last_modification_timestamp > created.json.last_modification_timestamp);
      assert.ok((await req('GET', '/list-conversation-flows')).json.some((f: any) => f.conversation_flow_id === id));
      assert.equal((await req('DELETE', `/delete-conversation-flow/${id}`)).status, 204);
      assert.equal((await req('GET', `/get-conversation-flow/${id}`)).status, 422);
    });

    it('checks the flow graph on write and names the offender', async () => {
      const flow = sampleFlow();
      const cases: Array<[unknown, RegExp]> = [
        [{ ...flow, start_node_id: 'nowhere' }, /start_node_id "nowhere"/],
        [{ ...flow, nodes: [...flow.nodes, { id: 'greet', type: 'end' }] }, /duplicate node id "greet"/],
        [
          { ...flow, nodes: [{ ...flow.nodes[0], edges: [{ id: 'x', destination_node_id: 'ghost', transition_condition: { type: 'always' } }] }, ...flow.nodes.slice(1)] },
          /edge "x" of node "greet" points at unknown node "ghost"/,
        ],
        [
          { ...flow, nodes: [{ ...flow.nodes[0], edges: [flow.nodes[0]!.edges![0], { ...flow.nodes[0]!.edges![0], destination_node_id: 'bye' }] }, ...flow.nodes.slice(1)] },
          /duplicate edge id "e_book"/,
        ],
        [{ ...flow, nodes: [{ id: 'greet', type: 'teleport' }] }, /type/],
        [{ ...flow, nodes: [{ ...flow.nodes[0], edges: [{ id: 'k', destination_node_id: 'bye', transition_condition: { type: 'keyword', keywords: [] } }] }, ...flow.nodes.slice(1)] }, /keywords/],
        // A digits variable's bounds (min_digits, max_digits): digits only, 1 to 50, the fewest at most the most.
        [{ ...flow, nodes: [{ ...flow.nodes[0], extract_variables: [{ name: 'who', type: 'text', max_digits: 4 }] }, ...flow.nodes.slice(1)] }, /variable "who" of node "greet" is not of type digits/],
        [{ ...flow, nodes: [{ ...flow.nodes[0], extract_variables: [{ name: 'pin', type: 'digits', min_digits: 6, max_digits: 4 }] }, ...flow.nodes.slice(1)] }, /min_digits 6 over max_digits 4/],
        [{ ...flow, nodes: [{ ...flow.nodes[0], extract_variables: [{ name: 'pin', type: 'digits', min_digits: 60 }] }, ...flow.nodes.slice(1)] }, /min_digits/],
        [{ ...flow, nodes: [{ ...flow.nodes[0], extract_variables: [{ name: 'pin', type: 'digits', max_digits: 0 }] }, ...flow.nodes.slice(1)] }, /max_digits/],
        [{ ...flow, nodes: [{ ...flow.nodes[0], extract_variables: [{ name: 'pin', type: 'digits', max_digits: 2.5 }] }, ...flow.nodes.slice(1)] }, /max_digits/],
      ];
      const before = (await req('GET', '/list-conversation-flows')).json.length;
      for (const [body, message] of cases) {
        const res = await req('POST', '/create-conversation-flow', body);
        assert.equal(res.status, 400, JSON.stringify(res.json));
        assert.match(res.json.message, message);
      }
      assert.equal((await req('GET', '/list-conversation-flows')).json.length, before, 'nothing written');
      // an update that breaks the graph is refused too
      const { json: ok } = await req('POST', '/create-conversation-flow', flow);
      const broken = await req('PATCH', `/update-conversation-flow/${ok.conversation_flow_id}`, { start_node_id: 'ghost' });
      assert.equal(broken.status, 400);
      assert.equal((await req('GET', `/get-conversation-flow/${ok.conversation_flow_id}`)).json.start_node_id, 'greet');
    });

    it('creates service LLMs and checks their states', async () => {
      const llm = {
        general_prompt: 'You book appointments for {{company}}.',
        begin_message: 'Hi!',
        model: 'gpt-4o-mini',
        model_temperature: 0.2,
        states: [
          { name: 'intro', state_prompt: 'Greet.', edges: [{ destination_state_name: 'booking', description: 'wants to book' }] },
          { name: 'booking', state_prompt: 'Book.' },
        ],
        starting_state: 'intro',
      };
      const created = await req('POST', '/create-service-llm', llm);
      assert.equal(created.status, 201);
      assert.match(created.json.llm_id, /^llm_/);
      assert.equal(created.json.states.length, 2);
      const bad = await req('POST', '/create-service-llm', { ...llm, starting_state: 'nope' });
      assert.equal(bad.status, 400);
      assert.match(bad.json.message, /starting_state "nope"/);
      const badEdge = await req('POST', '/create-service-llm', { ...llm, states: [{ name: 'a', edges: [{ destination_state_name: 'zz' }] }], starting_state: 'a' });
      assert.match(badEdge.json.message, /unknown state "zz"/);
      const temp = await req('POST', '/create-service-llm', { ...llm, model_temperature: 3 });
      assert.equal(temp.status, 400);
      const upd = await req('PATCH', `/update-service-llm/${created.json.llm_id}`, { begin_message: 'Hello!' });
      assert.equal(upd.json.begin_message, 'Hello!');
      assert.equal((await req('GET', `/get-service-llm/${created.json.llm_id}`)).json.begin_message, 'Hello!');
      assert.ok((await req('GET', '/list-service-llms')).json.length >= 1);
    });

    it('answers the keypad settings it stores (allow_user_dtmf, user_dtmf_options), and an update replaces them', async () => {
      const flow = await req('POST', '/create-conversation-flow', sampleFlow());
      const engine = { type: 'conversation_flow', conversation_flow_id: flow.json.conversation_flow_id };
      const options = { digit_limit: 4, termination_key: '*', timeout_ms: 3000 };
      const created = await req('POST', '/create-agent', { response_engine: engine, allow_user_dtmf: false, user_dtmf_options: options });
      assert.equal(created.status, 201, created.raw);
      assert.deepEqual([created.json.allow_user_dtmf, created.json.user_dtmf_options], [false, options]);
      const id = created.json.agent_id;
      assert.deepEqual((await req('GET', `/get-agent/${id}`)).json.user_dtmf_options, options);
      const updated = await req('PATCH', `/update-agent/${id}`, { allow_user_dtmf: true, user_dtmf_options: null });
      assert.equal(updated.status, 200, updated.raw);
      assert.deepEqual([updated.json.allow_user_dtmf, updated.json.user_dtmf_options], [true, null]);
      assert.equal((await req('GET', `/get-agent/${id}?version=1`)).json.allow_user_dtmf, false, 'version 1 keeps what it was made with');
    });

    it('versions agents: every update is a new immutable version pinning its engine', async () => {
      const { json: flow } = await req('POST', '/create-conversation-flow', sampleFlow());
      const created = await req('POST', '/create-agent', {
        agent_name: 'Desk',
        response_engine: { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id },
      });
      assert.equal(created.status, 201);
      const agentId = created.json.agent_id;
      assert.equal(created.json.version, 1);
      assert.equal(created.json.voice_id, 'flite-kal16', 'defaults filled in');
      assert.equal(created.json.data_storage_setting, 'everything');
      assert.equal(created.json.interruption_sensitivity, 1);

      // Change the flow after version 1, then update the agent: version 2 pins the new flow.
      await req('PATCH', `/update-conversation-flow/${flow.conversation_flow_id}`, {
        nodes: [...sampleFlow().nodes, { id: 'extra', type: 'end' }],
      });
      const v2 = await req('PATCH', `/update-agent/${agentId}`, { agent_name: 'Front desk', interruption_sensitivity: 0.5 });
      assert.equal(v2.status, 200);
      assert.equal(v2.json.version, 2);
      assert.equal(v2.json.agent_name, 'Front desk');
      assert.equal((await req('GET', `/get-agent/${agentId}`)).json.version, 2);
      const v1 = await req('GET', `/get-agent/${agentId}?version=1`);
      assert.equal(v1.json.agent_name, 'Desk');
      assert.equal(v1.json.interruption_sensitivity, 1);
      assert.equal((await req('GET', `/get-agent/${agentId}?version=9`)).status, 422);
      assert.equal((await req('GET', `/get-agent/${agentId}?version=abc`)).status, 400);

      const versions = await req('GET', `/get-agent-versions/${agentId}`);
      assert.deepEqual(versions.json.map((v: any) => v.version), [1, 2]);

      // A call on version 1 may start at no node that only version 2's flow has.
      const onV1 = await req('POST', '/v2/create-web-call', { agent_id: agentId, agent_version: 1, current_node_id: 'extra' });
      assert.equal(onV1.status, 400);
      const onV2 = await req('POST', '/v2/create-web-call', { agent_id: agentId, agent_version: 2, current_node_id: 'extra' });
      assert.equal(onV2.status, 201);
      assert.equal(onV2.json.agent_version, 2);

      // The flow is in use: deleting it is refused; deleting the agent then frees it.
      assert.equal((await req('DELETE', `/delete-conversation-flow/${flow.conversation_flow_id}`)).status, 409);
      assert.ok((await req('GET', '/list-agents')).json.some((a: any) => a.agent_id === agentId && a.version === 2));
      assert.equal((await req('DELETE', `/delete-agent/${agentId}`)).status, 204);
      assert.equal((await req('GET', `/get-agent/${agentId}`)).status, 422);
      assert.equal((await req('DELETE', `/delete-conversation-flow/${flow.conversation_flow_id}`)).status, 204);
      // the call outlives its agent
      assert.equal((await req('GET', `/v2/get-call/${onV2.json.call_id}`)).status, 200);
    });

    it('starts every call on the agent as it is now: after updates (also racing with calls), for its owner only, and not after deletion', async () => {
      const { json: flow } = await req('POST', '/create-conversation-flow', sampleFlow());
      const { json: agent } = await req('POST', '/create-agent', {
        response_engine: { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id },
      });
      const call = () => req('POST', '/v2/create-web-call', { agent_id: agent.agent_id });
      assert.equal((await call()).json.agent_version, 1);
      assert.equal((await call()).json.agent_version, 1, 'asked twice, as a cache would be');
      assert.equal((await req('PATCH', `/update-agent/${agent.agent_id}`, { agent_name: 'Two' })).status, 200);
      const second = await call();
      assert.equal(second.json.agent_version, 2);
      assert.equal(second.json.agent_name, 'Two');
      assert.equal((await req('POST', '/v2/create-web-call', { agent_id: agent.agent_id, agent_version: 3 })).status, 422);

      for (let round = 0; round < 10; round++) {
        const [updated, ...calls] = await Promise.all([req('PATCH', `/update-agent/${agent.agent_id}`, { agent_name: `R${round}` }), call(), call(), call()]);
        assert.equal(updated.status, 200);
        for (const racing of calls) assert.ok(racing.json.agent_version === updated.json.version - 1 || racing.json.agent_version === updated.json.version);
        assert.equal((await call()).json.agent_version, updated.json.version, `round ${round}: the call after the update sees it`);
      }

      const other = await h.account();
      const foreign = await h.request({ method: 'POST', url: '/v2/create-web-call', key: other.apiKey, body: { agent_id: agent.agent_id } });
      assert.equal(foreign.status, 422, 'another account does not see the agent');
      assert.equal((await req('DELETE', `/delete-agent/${agent.agent_id}`)).status, 204);
      assert.equal((await call()).status, 422, 'no call on a deleted agent');
      assert.equal((await req('DELETE', `/delete-conversation-flow/${flow.conversation_flow_id}`)).status, 204);
    });

    it('refuses an agent on an engine that does not exist under the key', async () => {
      const res = await req('POST', '/create-agent', { response_engine: { type: 'service_llm', llm_id: 'llm_nope' } });
      assert.equal(res.status, 422);
      const wrongShape = await req('POST', '/create-agent', { response_engine: { type: 'service_llm', conversation_flow_id: 'x' } });
      assert.equal(wrongShape.status, 400);
    });
  });
}
