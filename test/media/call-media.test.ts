// The call object's `media`: how the call was carried, as its endpoint measured it, filled when
// the call ends (a basic attribute: kept under every storage policy), null before.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LoopbackTransport } from '../../src/media/loopback/loopback.transport.ts';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, eventually, fakeProviders, silence, startMediaServer } from './helpers.ts';

const HELLO = { start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello there.' } }] };

for (const kind of STORES) {
  describe(`the call's media (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    before(async () => {
      s = await startMediaServer(kind.name, { providers: fakeProviders([], { msPerChar: 4 }) });
    });
    after(async () => {
      await s.close();
    });

    it('a web call over the WebSocket: pcm16 at 16 kHz, the bytes and messages both ways; null until it ends', { timeout: 20_000 }, async () => {
      const agentId = await s.flowAgent(HELLO, { data_storage_setting: 'basic_attributes_only' });
      const client = await s.call(agentId);
      assert.equal((await s.api('GET', `/v2/get-call/${client.callId}`)).json.media, null, 'null while the call runs');
      await client.waitFor('agent_stop_talking', 10_000);
      await client.play(silence(400));
      await client.hangup();
      const media = (await s.api('GET', `/v2/get-call/${client.callId}`)).json.media;
      assert.equal(media.transport, 'websocket');
      assert.equal(media.codec, 'pcm16');
      assert.equal(media.sample_rate, 16_000);
      assert.equal(media.packets_lost, 0);
      assert.equal(media.jitter_ms, null);
      // The client sends a 20 ms frame (640 bytes) per message; the server sent the agent's audio in chunks.
      assert.ok(media.packets_in >= 20, `packets_in ${media.packets_in}`);
      assert.equal(media.bytes_in, media.packets_in * 640);
      const agentBytes = client.agentAudio.reduce((n, a) => n + a.pcm.byteLength, 0);
      assert.equal(media.bytes_out, agentBytes, 'what the server sent is what the client received');
      assert.ok(media.packets_out > 0);
    });

    it('a loopback call reports its own transport', { timeout: 20_000 }, async () => {
      const agentId = await s.flowAgent(HELLO);
      const { endpoint, session } = await (s.app.transports.get('loopback') as LoopbackTransport).admit({ accountId: s.accountId, agent_id: agentId, callType: 'web_call', concurrencyLimit: null });
      await endpoint.waitFor((e) => e.type === 'agent_done', 10_000);
      endpoint.play(silence(200));
      await eventually(() => endpoint.queuedSamples === 0);
      endpoint.hangup();
      await endpoint.ended;
      const media = (await s.api('GET', `/v2/get-call/${session.callId}`)).json.media;
      assert.deepEqual({ transport: media.transport, codec: media.codec, sample_rate: media.sample_rate }, { transport: 'loopback', codec: 'pcm16', sample_rate: 16_000 });
      assert.equal(media.bytes_out, endpoint.agentAudio().byteLength);
      assert.ok(media.bytes_in >= 200 * 32, `bytes_in ${media.bytes_in}: the 200 ms played at least`);
    });
  });
}
