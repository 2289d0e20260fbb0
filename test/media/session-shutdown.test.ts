// Ending the calls at shutdown within a grace: the post-call analysis goes to an LLM server that
// accepts and never answers, yet each call's results (transcript, the embedded analysis) are
// stored and call.finished recorded within the grace, for calls ongoing and for calls already
// ending when the shutdown began.
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { OpenAiChatLlm } from '../../src/providers/openai/chat.llm.ts';
import { STORES } from '../helpers/stores.ts';
import { eventually, fakeProviders, startMediaServer } from './helpers.ts';

/** What the registry may take beyond its grace: storing and closing on a shared machine. */
const MARGIN_MS = 500;

const greeter = {
  start_node_id: 'talk',
  nodes: [{ id: 'talk', type: 'conversation', instruction: { type: 'static_text', text: 'Hello, thanks for calling.' } }],
};

/** An OpenAI-compatible server that takes each request and never answers. */
async function hangingLlmServer() {
  const open = new Set<ServerResponse>();
  let requests = 0;
  const server = createServer((req, res) => {
    requests += 1;
    open.add(res);
    req.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    get requests() {
      return requests;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

for (const kind of STORES) {
  describe(`ending calls at shutdown within a grace on ${kind.name}`, { skip: kind.skip }, () => {
    it('stores every call (server_shutdown, or the reason it was already ending with) with the embedded analysis when the LLM does not answer in time', { timeout: 30_000 }, async () => {
      const llmServer = await hangingLlmServer();
      // The LLM's own timeouts are far beyond the grace: only the deadline can end the analysis.
      const llm = new OpenAiChatLlm({ baseUrl: llmServer.baseUrl, model: 'm', timeoutMs: 60_000 });
      const s = await startMediaServer(kind.name, { providers: { ...fakeProviders([]), llm }, timings: { analysisTimeoutMs: 60_000 } });
      try {
        const agent = await s.flowAgent(greeter);
        const ongoing = await s.call(agent);
        const leaving = await s.call(agent);
        await Promise.all([ongoing, leaving].map((c) => c.waitFor('agent_stop_talking', 5_000)));
        // One caller hangs up first: that call's analysis is waiting on the LLM when the shutdown begins.
        void leaving.hangup();
        await eventually(() => llmServer.requests >= 1, 5_000);

        const graceMs = 1_500;
        const started = performance.now();
        await s.runtime.media.sessions.close({ graceMs });
        const ms = performance.now() - started;
        assert.ok(ms < graceMs + MARGIN_MS, `closing took ${Math.round(ms)} ms`);
        assert.equal(llmServer.requests, 2, 'both analyses were asked of the LLM');

        assert.equal((await ongoing.ended).disconnection_reason, 'server_shutdown');
        assert.equal((await leaving.ended).disconnection_reason, 'user_hangup');
        for (const [client, reason] of [[ongoing, 'server_shutdown'], [leaving, 'user_hangup']] as const) {
          const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
          assert.equal(call.call_status, 'ended');
          assert.equal(call.disconnection_reason, reason);
          assert.match(call.transcript, /Hello, thanks for calling/);
          // The embedded analysis: its summary names how the call ended.
          assert.match(call.call_analysis.call_summary, new RegExp(`Call with 1 agent .*\\(${reason}\\)`));
        }
        assert.deepEqual((await s.eventKinds()).filter((k) => k === 'call.finished'), ['call.finished', 'call.finished']);
      } finally {
        await s.close();
        await llmServer.close();
      }
    });
  });
}
