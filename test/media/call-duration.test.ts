// A call's end timestamp and duration are when its media stopped, not when its results were
// stored: the post-call analysis (an LLM) and the recording come after the call and are not its time.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WebCallClient } from '../../src/client/web-call-client.ts';
import type { LlmProvider } from '../../src/providers/llm.ts';
import { FakeLlm } from '../../src/providers/fake/fake.providers.ts';
import { eventually, fakeProviders, startMediaServer, type MediaServer } from './helpers.ts';

const ANALYSIS_MS = 2_000;

describe("a call's duration", () => {
  let s: MediaServer;
  let analysed = 0;
  before(async () => {
    const fake = new FakeLlm([JSON.stringify({ call_summary: 'A short call.', call_successful: true, user_sentiment: 'Neutral' })]);
    // The analysis's LLM answers after ANALYSIS_MS (the flow itself needs no LLM).
    const slow: LlmProvider = {
      id: 'slow',
      async *chat(request) {
        await new Promise((resolve) => setTimeout(resolve, ANALYSIS_MS));
        yield* fake.chat(request);
        analysed = Date.now();
      },
    };
    s = await startMediaServer('sqlite', { providers: fakeProviders([], { llm: slow }) });
  });
  after(() => s.close());

  it('ends when the caller hangs up, not once the analysis is stored', { timeout: 30_000 }, async () => {
    const agentId = await s.flowAgent({ start_node_id: 'n', nodes: [{ id: 'n', type: 'conversation', instruction: { type: 'static_text', text: 'Hello.' }, edges: [] }] });
    const created = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
    const client = await WebCallClient.join({ url: s.baseUrl, accessToken: created.json.access_token as string });
    await client.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
    const hungUpAt = Date.now();
    await client.hangup();
    const callId = created.json.call_id as string;
    const call = await eventually(async () => {
      const c = (await s.api('GET', `/v2/get-call/${callId}`)).json;
      return c.call_status === 'ended' ? c : undefined;
    }, 20_000);
    assert.equal(call.call_analysis?.call_summary, 'A short call.', 'the LLM wrote the analysis');
    assert.ok(analysed - hungUpAt >= ANALYSIS_MS, 'the analysis took its time after the hang-up');
    assert.ok(call.end_timestamp < hungUpAt + ANALYSIS_MS / 2, `the call ended ${call.end_timestamp - hungUpAt} ms after the hang-up`);
    assert.equal(call.duration_ms, call.end_timestamp - call.start_timestamp);
  });
});
