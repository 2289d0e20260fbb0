// Audio mode: the script is spoken by a Flite voice into a real call session on the in-process
// endpoint (voice activity, PocketSphinx, end of turn, the flow, Flite for the agent), and the
// call leaves nothing among the account's calls. The call runs on a virtual clock: its silences
// and the session's timers take no real time, so a minute of call plays in a few seconds.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../voice/capabilities.ts';
import { ChatServer } from '../knowledge/chat-server.ts';
import { flowAgent, runToEnd } from './helpers.ts';

const FLOW = {
  start_node_id: 'greet',
  nodes: [
    {
      id: 'greet', type: 'conversation', instruction: { type: 'static_text', text: 'Hello. Sales or support?' },
      edges: [
        { id: 's', destination_node_id: 'sales', transition_condition: { type: 'keyword', keywords: ['sales'] } },
        { id: 'h', destination_node_id: 'support', transition_condition: { type: 'keyword', keywords: ['support'] } },
      ],
    },
    { id: 'sales', type: 'end', instruction: { type: 'static_text', text: 'Sales it is. Goodbye.' } },
    { id: 'support', type: 'end', instruction: { type: 'static_text', text: 'Support it is. Goodbye.' } },
  ],
};

/** A long opening to speak over, and keys for each branch. */
const KEYPAD_FLOW = {
  start_node_id: 'greet',
  nodes: [
    {
      id: 'greet', type: 'conversation',
      instruction: { type: 'static_text', text: 'Hello and welcome. Press one or say sales for our sales team, press two or say support for help with an order.' },
      edges: [
        { id: 's', destination_node_id: 'sales', transition_condition: { type: 'keyword', keywords: ['sales', '1'] } },
        { id: 'h', destination_node_id: 'support', transition_condition: { type: 'keyword', keywords: ['support', '2'] } },
      ],
    },
    { id: 'sales', type: 'end', instruction: { type: 'static_text', text: 'Sales it is. Goodbye.' } },
    { id: 'support', type: 'end', instruction: { type: 'static_text', text: 'Support it is. Goodbye.' } },
  ],
};

async function agentOn(h: Harness, key: string, flow: unknown, settings: Record<string, unknown>): Promise<string> {
  const created = await h.request({ method: 'POST', url: '/create-conversation-flow', key, body: flow });
  assert.equal(created.status, 201, created.raw);
  const agent = await h.request({ method: 'POST', url: '/create-agent', key, body: { response_engine: { type: 'conversation_flow', conversation_flow_id: created.json.conversation_flow_id }, ...settings } });
  assert.equal(agent.status, 201, agent.raw);
  return agent.json.agent_id as string;
}

async function audioCase(h: Harness, key: string, body: Record<string, unknown>): Promise<string> {
  const created = await h.request({ method: 'POST', url: '/create-test-case', key, body: { mode: 'audio', ...body } });
  assert.equal(created.status, 201, created.raw);
  return created.json.test_case_id as string;
}

for (const kind of STORES) {
  describe(`agent tests in audio mode (${kind.name})`, { skip: kind.skip || (!hasPocketsphinx() && NO_POCKETSPHINX) }, () => {
    let h: Harness;
    let key: string;
    // The configured LLM, a local OpenAI-compatible server: it plays the persona (and answers the analysis with nothing).
    const llm = new ChatServer();
    llm.answer = (body) => {
      const [system, asked] = body.messages;
      if (!system?.content?.startsWith('You are a caller')) return '{}';
      return asked?.content?.includes('Sales it is') ? 'END_CALL' : 'i want sales please';
    };
    // A function backend the cases that allow unmocked functions reach for real.
    const backendCalls: unknown[] = [];
    const backend = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        backendCalls.push(JSON.parse(body));
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ state: 'open' }));
      });
    });
    before(async () => {
      const llmUrl = await llm.listen();
      await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
      // The server's own speech providers are the scripted fakes: cases run on the embedded engines
      // (PocketSphinx, Flite) unless they name the fakes. A recogniser that falls behind on a loaded
      // machine is given time rather than failing the call (error_asr).
      // The backend is on loopback: the destination policy lets it be reached, as an operator would.
      h = await startHarness(kind.name, { STT_PROVIDER: 'fake', TTS_PROVIDER: 'fake', STT_TIMEOUT_MS: '60000', LLM_BASE_URL: llmUrl, WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' });
      key = (await h.account()).apiKey;
    });
    after(async () => {
      await h?.close();
      await llm.close();
      backend.close();
    });

    it('a spoken script takes the keyword branch through the whole pipeline; nothing among real calls', { timeout: 150_000 }, async () => {
      const agentId = await flowAgent(h, key, FLOW);
      const created = await h.request({
        method: 'POST', url: '/create-test-case', key,
        body: {
          agent_id: agentId, mode: 'audio', caller_voice_id: 'flite-kal16',
          caller: { script: [{ say: 'i want sales please' }] },
          assertions: [
            { type: 'node_path', node_ids: ['greet', 'sales'] },
            { type: 'transcript_contains', role: 'user', text: 'sales' },
            { type: 'transcript_contains', role: 'agent', text: 'Sales it is' },
            { type: 'disconnection_reason', value: 'agent_hangup' },
          ],
        },
      });
      assert.equal(created.status, 201, created.raw);
      const run = await runToEnd(h, key, { agent_id: agentId });
      const [result] = run.results;
      assert.equal(result.error, null);
      assert.equal(result.passed, true, JSON.stringify({ assertions: result.assertions, transcript: result.transcript }));
      assert.equal(result.mode, 'audio');
      assert.equal(result.clock, 'virtual');
      assert.deepEqual(result.providers, { stt: 'pocketsphinx', tts: 'flite' });
      assert.ok(result.latency.values_ms.length >= 1);
      assert.deepEqual((await h.request({ method: 'POST', url: '/v2/list-calls', key, body: {} })).json, []);
    });

    it("the session's silence timer runs on the call's clock: a 20 s silence ends the call in far less real time", { timeout: 60_000 }, async () => {
      const agentId = await agentOn(h, key, FLOW, { end_call_after_silence_ms: 20_000 });
      await audioCase(h, key, {
        agent_id: agentId,
        caller: { script: [{ wait_ms: 60_000 }] },
        assertions: [{ type: 'disconnection_reason', value: 'inactivity' }, { type: 'transcript_contains', role: 'agent', text: 'Sales or support' }],
      });
      const [result] = (await runToEnd(h, key, { agent_id: agentId })).results;
      assert.equal(result.passed, true, JSON.stringify({ error: result.error, assertions: result.assertions, transcript: result.transcript }));
      assert.ok(result.simulated_ms >= 20_000 && result.simulated_ms < 30_000, `call time ${result.simulated_ms} ms`);
      assert.ok(result.duration_ms < 10_000, `played in ${result.duration_ms} ms of real time`);
    });

    it("a persona played by the LLM, its words spoken into the call; it hears the agent as the call's transcript", { timeout: 150_000 }, async () => {
      const agentId = await flowAgent(h, key, FLOW);
      await audioCase(h, key, {
        agent_id: agentId,
        caller: { persona: 'A shopper who wants to buy a sofa.', goal: 'Reach the sales team.' },
        assertions: [{ type: 'node_path', node_ids: ['greet', 'sales'] }, { type: 'transcript_contains', role: 'user', text: 'sales' }],
      });
      const [result] = (await runToEnd(h, key, { agent_id: agentId })).results;
      assert.equal(result.passed, true, JSON.stringify({ error: result.error, assertions: result.assertions, transcript: result.transcript }));
      const persona = llm.requests.filter((r) => r.messages[0]?.content?.startsWith('You are a caller'));
      assert.ok(persona.length >= 1);
      assert.match(persona[0]!.messages[1]!.content ?? '', /Agent: Hello\. Sales or support\?/);
    });

    it("a case runs on the providers it names, which must be known and configured (400 naming the field)", { timeout: 60_000 }, async () => {
      const agentId = await flowAgent(h, key, FLOW);
      const base = { agent_id: agentId, mode: 'audio', caller: { script: [{ say: 'i want sales please' }] }, assertions: [{ type: 'node_path', node_ids: ['greet', 'sales'] }] };
      for (const [providers, field, says] of [
        [{ stt: 'nope' }, 'providers.stt', 'no speech recogniser named "nope"'],
        [{ tts: 'elevenlabs' }, 'providers.tts', 'elevenlabs is not configured on this server'],
        [{ stt: 'deepgram' }, 'providers.stt', 'deepgram is not configured on this server'],
        [{ stt: 'fake', asr: 'x' }, 'providers', ''],
      ] as const) {
        const refused = await h.request({ method: 'POST', url: '/create-test-case', key, body: { ...base, providers } });
        assert.equal(refused.status, 400, refused.raw);
        assert.match(refused.json.message ?? refused.raw, new RegExp(`${field.replace('.', '\\.')}`), refused.raw);
        assert.ok(String(refused.json.message).includes(says), refused.raw);
      }
      assert.deepEqual((await h.request({ method: 'GET', url: `/list-test-cases?agent_id=${agentId}`, key })).json, []);
      const named = await audioCase(h, key, { ...base, name: 'on the fakes', providers: { stt: 'fake', tts: 'fake' } });
      const patched = await h.request({ method: 'PATCH', url: `/update-test-case/${named}`, key, body: { providers: { stt: 'deepgram' } } });
      assert.equal(patched.status, 400, patched.raw);
      assert.match(patched.raw, /providers\.stt: deepgram is not configured/);
      const [result] = (await runToEnd(h, key, { agent_id: agentId, test_case_ids: [named] })).results;
      assert.equal(result.error, null);
      assert.deepEqual(result.providers, { stt: 'fake', tts: 'fake' });
      // The scripted recogniser heard nothing: the flow stayed where it began.
      assert.equal(result.passed, false);
      assert.deepEqual(result.node_path, ['greet']);
    });

    it('keys pressed in a script and a caller speaking over the agent, through the whole pipeline', { timeout: 150_000 }, async () => {
      const agentId = await agentOn(h, key, KEYPAD_FLOW, {});
      const keyed = await audioCase(h, key, {
        agent_id: agentId, name: 'keypad',
        caller: { script: [{ dtmf: '2#' }] },
        assertions: [{ type: 'node_path', node_ids: ['greet', 'support'] }, { type: 'transcript_contains', role: 'agent', text: 'Support it is' }],
      });
      const interrupted = await audioCase(h, key, {
        agent_id: agentId, name: 'barge-in',
        caller: { script: [{ interrupt: 'i want sales please', after_words: 3 }] },
        assertions: [{ type: 'node_path', node_ids: ['greet', 'sales'] }, { type: 'transcript_contains', role: 'agent', text: 'Sales it is' }],
      });
      const run = await runToEnd(h, key, { agent_id: agentId, test_case_ids: [keyed, interrupted] });
      const [pressed, spoken] = run.results;
      assert.equal(pressed.passed, true, JSON.stringify({ error: pressed.error, assertions: pressed.assertions, transcript: pressed.transcript }));
      assert.equal(spoken.passed, true, JSON.stringify({ error: spoken.error, assertions: spoken.assertions, transcript: spoken.transcript }));
      // The opening was cut off where the caller spoke over it: only what was heard of it is kept.
      const opening = spoken.transcript[0];
      assert.equal(opening.role, 'agent');
      assert.equal(opening.cut_off, true, JSON.stringify(spoken.transcript));
      assert.ok(!opening.content.includes('help with an order'), opening.content);
    });

    it('a case that allows unmocked functions reaches the real backend; one that does not is refused', async () => {
      const url = `http://127.0.0.1:${(backend.address() as AddressInfo).port}/check`;
      const flow = {
        start_node_id: 'lookup',
        tools: [{ tool_id: 't', type: 'custom', name: 'check', url, timeout_ms: 2_000, response_variables: { state: 'state' } }],
        nodes: [
          {
            id: 'lookup', type: 'function', tool_id: 't', args: { account: '42' },
            edges: [
              { id: 'ok', destination_node_id: 'ok', transition_condition: { type: 'equation', operator: '&&', equations: [{ left: 'tool_call_status', operator: '==', right: 'success' }] } },
              { id: 'else', destination_node_id: 'failed', transition_condition: { type: 'always' } },
            ],
          },
          { id: 'ok', type: 'end', instruction: { type: 'static_text', text: 'The state is {{state}}.' } },
          { id: 'failed', type: 'end', instruction: { type: 'static_text', text: 'It failed.' } },
        ],
      };
      const agentId = await agentOn(h, key, flow, {});
      const allowed = await audioCase(h, key, { agent_id: agentId, allow_unmocked_functions: true, metadata: { suite: 'audio' }, caller: { script: [] }, assertions: [{ type: 'node_reached', node_id: 'ok' }] });
      const refused = await audioCase(h, key, { agent_id: agentId, caller: { script: [] }, assertions: [{ type: 'node_reached', node_id: 'failed' }] });
      const before = backendCalls.length;
      const run = await runToEnd(h, key, { agent_id: agentId, test_case_ids: [allowed, refused] });
      const [real, mocked] = run.results;
      assert.equal(real.passed, true, JSON.stringify({ error: real.error, assertions: real.assertions, transcript: real.transcript }));
      assert.deepEqual(real.tool_calls, [{ name: 'check', arguments: { account: '42' }, result: '{"state":"open"}', mocked: false, ok: true }]);
      assert.equal(mocked.passed, true, JSON.stringify({ error: mocked.error, assertions: mocked.assertions }));
      assert.match(mocked.tool_calls[0].result, /not mocked/);
      // Only the case that allows it reached the backend, which was told the case's metadata.
      assert.equal(backendCalls.length, before + 1);
      assert.deepEqual((backendCalls.at(-1) as { call: { metadata: unknown } }).call.metadata, { suite: 'audio' });
    });
  });
}
