// A caller that sends with Opus DTX (issue 23, the server's own reply latency over WebRTC): once its
// speech ends, the sender goes quiet on the wire (libopus's refresh every 400 ms apart). The
// endpoint hears that as silence in real time, so the end of turn counts it as it comes instead of
// waiting for the next packet to fill the gap. The Node client joins over real UDP on loopback, once
// sending every 20 ms (the baseline, as Chromium sends here) and once with DTX, on the same server.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WebCallClient } from '../../src/client/web-call-client.ts';
import { concat, fakeProviders, silence, startMediaServer, tone } from './helpers.ts';

const flow = { start_node_id: 'loop', nodes: [{ id: 'loop', type: 'conversation', instruction: { type: 'static_text', text: 'Okay.' } }] };

describe('a caller sending with Opus DTX', () => {
  it('ends its turn after the end-of-turn silence, as a caller sending every 20 ms does', { timeout: 60_000 }, async () => {
    const s = await startMediaServer('sqlite', { providers: fakeProviders(['hello', 'hello', 'hello', 'hello']), env: { RTC_BIND_ADDRESS: '127.0.0.1', RTC_ICE_TCP: 'false' } });
    try {
      // A fixed 300 ms end of turn: the e2e is that silence plus the fakes' and the transport's work.
      const agentId = await s.flowAgent(flow, { end_of_turn_min_silence_ms: 300, end_of_turn_max_silence_ms: 300 });
      const e2eOf = async (dtx: boolean) => {
        const created = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
        const client = await WebCallClient.join({ url: s.baseUrl, accessToken: created.json.access_token, transport: 'webrtc', iceAddress: '127.0.0.1', timeoutMs: 15_000, dtx });
        await client.waitFor('agent_stop_talking', 10_000);
        await client.play(concat(silence(200), tone(600), silence(1_500)));
        await client.waitFor(() => client.events.filter((e) => e.type === 'agent_stop_talking').length >= 2, 10_000);
        await client.hangup();
        const call = (await s.api('GET', `/v2/get-call/${created.json.call_id}`)).json;
        const values = call.latency.e2e.values as number[];
        assert.equal(values.length, 1, `one reply to the caller (${dtx ? 'DTX' : 'every 20 ms'})`);
        return { e2e: values[0]!, packetsIn: call.media.packets_in as number };
      };
      const continuous = await e2eOf(false);
      const dtx = await e2eOf(true);
      assert.ok(dtx.packetsIn < continuous.packetsIn - 40, `the DTX caller was quiet on the wire (${dtx.packetsIn} packets in against ${continuous.packetsIn})`);
      // Without the silence fed in real time the DTX caller's turn ends only at libopus's next refresh,
      // about 300 ms later (measured: 639 ms against 324 ms sending every 20 ms).
      assert.ok(dtx.e2e < 480, `e2e with DTX ${dtx.e2e} ms against ${continuous.e2e} ms sending every 20 ms (300 ms end of turn)`);
    } finally {
      await s.close();
    }
  });
});
