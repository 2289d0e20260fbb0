// The hostile-peer suite against a real server process (fake speech engines, both stores). A
// tenant's own peers, written here, attack it: a custom-LLM server and a function backend that
// send JSON nested thousands of levels deep, floods of records just under the frame limits, and
// connections dropped right after each reconnect. For each attack: the process lives and answers,
// another tenant's call in flight goes on untouched, memory stays bounded, and the attacked call
// ends with the reason that names what failed (or goes on, where nothing should end it).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WebCallClient } from '../../src/client/web-call-client.ts';
import { type ServerProcess, runCli, startServer } from '../helpers/process.ts';
import { STORES, type TestStore, openTestStore } from '../helpers/stores.ts';
import { Receiver } from '../webhooks/receiver.ts';
import { HostileLlmServer, deepArray, rssBytes, sendRaw } from './helpers.ts';

const ENV = { STT_PROVIDER: 'fake', TTS_PROVIDER: 'fake', VAD_PROVIDER: 'energy', WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' };

type Json = Record<string, any>;

for (const kind of STORES) {
  describe(`hostile peers against a server process (${kind.name})`, { skip: kind.skip }, () => {
    let store: TestStore;
    let server: ServerProcess;
    let llm: HostileLlmServer;
    let backend: Receiver;
    let attacker: string;
    let bystanderKey: string;
    let bystander: WebCallClient;
    let bystanderCallId: string;

    const api = async (key: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: Json }> => {
      const res = await fetch(`${server.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, json: (await res.json()) as Json };
    };
    const agent = async (key: string, body: Json): Promise<string> => {
      const created = await api(key, 'POST', '/create-agent', body);
      assert.equal(created.status, 201, JSON.stringify(created.json));
      return created.json.agent_id as string;
    };
    const flowAgent = async (key: string, flow: Json, extra: Json = {}): Promise<string> => {
      const created = await api(key, 'POST', '/create-conversation-flow', flow);
      assert.equal(created.status, 201, JSON.stringify(created.json));
      return agent(key, { response_engine: { type: 'conversation_flow', conversation_flow_id: created.json.conversation_flow_id }, ...extra });
    };
    const join = async (key: string, agentId: string): Promise<WebCallClient> => {
      const created = await api(key, 'POST', '/v2/create-web-call', { agent_id: agentId });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      return WebCallClient.join({ url: server.baseUrl, accessToken: created.json.access_token });
    };
    const finished = async (key: string, callId: string, timeoutMs = 30_000): Promise<Json> => {
      for (const until = Date.now() + timeoutMs; Date.now() < until; await new Promise((resolve) => setTimeout(resolve, 100))) {
        const got = await api(key, 'GET', `/v2/get-call/${callId}`);
        if (got.json.call_status === 'ended' || got.json.call_status === 'error') return got.json;
      }
      throw new Error(`call ${callId} did not end in ${timeoutMs} ms`);
    };
    /** The process lives and answers, and the other tenant's call is still served (a ping round trip). */
    const stillServing = async (what: string): Promise<void> => {
      assert.equal(server.child.exitCode, null, `${what}: the server process exited (${server.stderr().slice(-400)})`);
      assert.equal(server.child.signalCode, null, `${what}: the server process was killed`);
      assert.equal((await fetch(`${server.baseUrl}/healthz`)).status, 200, `${what}: /healthz`);
      assert.ok((await bystander.ping()) < 2_000, `${what}: the other tenant's call answers a ping`);
    };

    before(async () => {
      store = await openTestStore(kind.name);
      llm = new HostileLlmServer();
      backend = await Receiver.start();
      const env = { DATA_DIR: store.dataDir, ...(store.databaseUrl ? { DATABASE_URL: store.databaseUrl } : {}), ...ENV };
      const keys = await Promise.all(['attacker', 'bystander'].map((name) => runCli(['keys', 'create', '--name', name, '--rate-limit', '1000'], env)));
      for (const k of keys) assert.equal(k.code, 0, k.stderr);
      attacker = JSON.parse(keys[0]!.stdout).api_key;
      bystanderKey = JSON.parse(keys[1]!.stdout).api_key;
      server = await startServer(env);
      // The other tenant: a call in flight through every attack, greeted, then listening.
      const quiet = await flowAgent(bystanderKey, {
        start_node_id: 'hi',
        nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello, I am listening.' } }],
      }, { end_call_after_silence_ms: 600_000 });
      bystander = await join(bystanderKey, quiet);
      bystanderCallId = bystander.callId;
      await bystander.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
    });
    after(async () => {
      bystander?.close();
      await server?.stop('SIGKILL');
      await llm?.close();
      await backend?.close();
      await store?.close();
    });

    // Finding 1: JSON.stringify of a deep value threw inside the ws message handler, and the process exited.
    for (const [name, frame] of [
      ['a metadata event nested 4,500 arrays deep (9 KB)', `{"response_type":"metadata","metadata":${deepArray(4_500)}}`],
      ['tool_call_invocation.arguments nested 20,000 deep (40 KB)', `{"response_type":"tool_call_invocation","tool_call_id":"t1","name":"x","arguments":${deepArray(20_000)}}`],
      ['tool_call_result.content nested 20,000 deep (40 KB)', `{"response_type":"tool_call_result","tool_call_id":"t1","content":${deepArray(20_000)}}`],
    ] as const) {
      it(`a custom-LLM server's ${name} ends its call error_llm_websocket_corrupt_payload, not the process`, { timeout: 30_000 }, async () => {
        const behaviour = `deep-${name.split(' ')[0]!.replace(/\W/g, '')}-${frame.length}`;
        llm.behaviours.set(behaviour, (ws) => {
          sendRaw(ws, JSON.stringify({ response_type: 'response', response_id: 0, content: 'Hello.', content_complete: false }));
          setTimeout(() => sendRaw(ws, frame), 200);
        });
        const client = await join(attacker, await agent(attacker, { response_engine: { type: 'custom_llm', llm_websocket_url: llm.url(behaviour) } }));
        const end = await client.ended;
        assert.equal(end.disconnection_reason, 'error_llm_websocket_corrupt_payload');
        assert.ok(client.events.some((e) => e.type === 'error' && e['code'] === 'error_llm_websocket_corrupt_payload'), 'the client was told why');
        const call = await finished(attacker, client.callId);
        assert.equal(call.disconnection_reason, 'error_llm_websocket_corrupt_payload');
        await stillServing(name);
      });
    }

    // Finding 2: a function backend's answer nested 20,000 deep threw in the result's handling:
    // an unhandled rejection (wait_for_result false) that ended the process, or error_tts (true).
    it('a function backend answering JSON nested 20,000 deep, not waited for: the call goes on', { timeout: 30_000 }, async () => {
      backend.respond = (request) => (request.path === '/deep' ? { status: 200, headers: { 'content-type': 'application/json' }, body: `{"a":${deepArray(20_000)}}` } : { status: 404 });
      const agentId = await flowAgent(attacker, {
        start_node_id: 'fn',
        tools: [{ tool_id: 'deep', type: 'custom', name: 'deep', description: 'Answers deep JSON.', url: backend.url('/deep'), response_variables: { v: 'a' } }],
        nodes: [
          { id: 'fn', type: 'function', tool_id: 'deep', wait_for_result: false, edges: [{ id: 'on', destination_node_id: 'talk', transition_condition: { type: 'always' } }] },
          { id: 'talk', type: 'conversation', instruction: { type: 'static_text', text: 'Still here, status {{tool_call_status}}.' } },
        ],
      });
      const requests = backend.received.length;
      const client = await join(attacker, agentId);
      await client.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
      for (const until = Date.now() + 10_000; backend.received.length === requests && Date.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.ok(backend.received.length > requests, 'the backend was asked');
      await new Promise((resolve) => setTimeout(resolve, 500)); // the answer is in and handled
      await stillServing('deep function answer, not waited for');
      const end = await client.hangup();
      assert.equal(end.disconnection_reason, 'user_hangup');
      const call = await finished(attacker, client.callId);
      assert.equal(call.call_status, 'ended');
      assert.ok((call.transcript_with_tool_calls as Json[]).some((e) => e['role'] === 'tool_call_invocation' && e['name'] === 'deep'), 'the invocation is recorded');
    });

    it('a function backend answering JSON nested 20,000 deep, waited for: the flow takes its error path, never error_tts', { timeout: 30_000 }, async () => {
      backend.respond = (request) => (request.path === '/deep' ? { status: 200, headers: { 'content-type': 'application/json' }, body: `{"a":${deepArray(20_000)}}` } : { status: 404 });
      const agentId = await flowAgent(attacker, {
        start_node_id: 'fn',
        tools: [{ tool_id: 'deep', type: 'custom', name: 'deep', description: 'Answers deep JSON.', url: backend.url('/deep'), response_variables: { v: 'a' } }],
        nodes: [
          {
            id: 'fn', type: 'function', tool_id: 'deep', wait_for_result: true,
            edges: [
              { id: 'ok', destination_node_id: 'fine', transition_condition: { type: 'equation', operator: '&&', equations: [{ left: 'tool_call_status', operator: '==', right: 'success' }] } },
              { id: 'else', destination_node_id: 'sorry', transition_condition: { type: 'always' } },
            ],
          },
          { id: 'fine', type: 'end', instruction: { type: 'static_text', text: 'All fine.' } },
          { id: 'sorry', type: 'end', instruction: { type: 'static_text', text: 'Sorry, that failed ({{tool_call_error}}).' } },
        ],
      });
      const client = await join(attacker, agentId);
      const end = await client.ended;
      assert.equal(end.disconnection_reason, 'agent_hangup');
      const call = await finished(attacker, client.callId);
      assert.equal(call.disconnection_reason, 'agent_hangup');
      assert.match(call.transcript, /Sorry, that failed \(invalid_json\)/);
      await stillServing('deep function answer, waited for');
    });

    // Finding 3: 150 frames/s of 61 KB tool_call_invocations (under the 200 frames/s limit) made a
    // 122.8 MB transcript_with_tool_calls in 13 s, and a call.finished of the same size.
    it('a flood of 61 KB tool-call records just under the frame limits: the record is bounded, the call goes on', { timeout: 60_000 }, async () => {
      const FLOOD_MS = 5_000;
      const args = JSON.stringify({ blob: 'x'.repeat(61_000) });
      llm.behaviours.set('tool-flood', (ws) => {
        sendRaw(ws, JSON.stringify({ response_type: 'response', response_id: 0, content: 'Hello, one moment.', content_complete: false }));
        let n = 0;
        const timer = setInterval(() => {
          for (let i = 0; i < 3; i++) sendRaw(ws, JSON.stringify({ response_type: 'tool_call_invocation', tool_call_id: `t${++n}`, name: 'flood', arguments: args }));
        }, 20);
        setTimeout(() => {
          clearInterval(timer);
          sendRaw(ws, JSON.stringify({ response_type: 'response', response_id: 0, content: ' Goodbye.', content_complete: true, end_call: true }));
        }, FLOOD_MS);
        ws.on('close', () => clearInterval(timer));
      });
      const webhookPath = '/agent-hook';
      const hooks = backend.received.length;
      backend.respond = () => ({ status: 200, body: 'ok' });
      const agentId = await agent(attacker, { response_engine: { type: 'custom_llm', llm_websocket_url: llm.url('tool-flood') }, webhook_url: backend.url(webhookPath) });
      const pid = server.child.pid!;
      const baseline = rssBytes(pid);
      let peak = baseline;
      const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 100);
      try {
        const client = await join(attacker, agentId);
        const end = await client.ended;
        assert.equal(end.disconnection_reason, 'agent_hangup');
        const call = await finished(attacker, client.callId);
        const records = (call.transcript_with_tool_calls as Json[]).filter((e) => e['role'] === 'tool_call_invocation' || e['role'] === 'tool_call_result');
        const bytes = Buffer.byteLength(JSON.stringify(call.transcript_with_tool_calls));
        console.log(`# ${kind.name}: ${records.length} records kept, transcript_with_tool_calls ${(bytes / 1024).toFixed(0)} KB, RSS +${((peak - baseline) / 1_048_576).toFixed(1)} MB`);
        assert.ok(records.length <= 201, `${records.length} records kept`);
        assert.ok(bytes < 400_000, `transcript_with_tool_calls is ${bytes} bytes`);
        assert.equal(records.at(-1)?.['tool_call_id'], 'records_cut', 'the last record says the records were cut');
        // The call.finished delivery to the agent's webhook is bounded too.
        for (const until = Date.now() + 10_000; !backend.received.slice(hooks).some((r) => r.path === webhookPath) && Date.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 100));
        const hook = backend.received.slice(hooks).find((r) => r.path === webhookPath);
        assert.ok(hook, 'call.finished reached the agent webhook');
        assert.ok(hook.raw.length < 2_000_000, `call.finished is ${hook.raw.length} bytes`);
        assert.ok(peak - baseline < 150 * 1_048_576, `RSS grew ${((peak - baseline) / 1_048_576).toFixed(0)} MB`);
      } finally {
        clearInterval(sampler);
      }
      await stillServing('tool-call flood');
    });

    // Finding 6: the reconnect counter reset after each successful reopen: 62 dials in a 12 s call.
    it('a custom-LLM server that asks for auto_reconnect and drops every connection is dialled a bounded number of times', { timeout: 60_000 }, async () => {
      llm.behaviours.set('drop', (ws) => {
        sendRaw(ws, JSON.stringify({ response_type: 'config', config: { auto_reconnect: true, call_details: false } }));
        setTimeout(() => ws.close(1000), 50);
      });
      const client = await join(attacker, await agent(attacker, { response_engine: { type: 'custom_llm', llm_websocket_url: llm.url('drop') } }));
      const ended = await Promise.race([client.ended, new Promise<undefined>((resolve) => setTimeout(resolve, 20_000))]);
      const dials = llm.dials.get('drop') ?? 0;
      if (!ended) client.close();
      assert.ok(dials <= 11, `dialled ${dials} times`);
      assert.equal(ended?.disconnection_reason, 'error_llm_websocket_lost_connection');
      await stillServing('reconnect flood');
    });

    it('through every attack, the other tenant\'s call went on, and nothing escaped the per-call boundary', { timeout: 30_000 }, async () => {
      await stillServing('after the attacks');
      const end = await bystander.hangup();
      assert.equal(end.disconnection_reason, 'user_hangup');
      const call = await finished(bystanderKey, bystanderCallId);
      assert.equal(call.call_status, 'ended');
      assert.match(call.transcript, /Hello, I am listening\./);
      const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
      assert.doesNotMatch(metrics, /^switchboard_uncaught_errors_total\{[^}]*\} [1-9]/m, 'an error escaped to the process handlers');
    });
  });
}
