// WebRTC on networks as they are (issue 23): a caller whose UDP to the server is blocked reaches it
// through a real TURN server (coturn) over TCP, with credentials made for the call; and RTP of a
// payload type the answer did not name is dropped and counted, not decoded.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { MediaStreamTrack, RTCPeerConnection, RtpHeader } from 'werift';
import { WebCallClient } from '../../src/client/web-call-client.ts';
import { opusPayloadTypeOf } from '../../src/protocol/webrtc-sdp.ts';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, eventually, fakeProviders, metricValue, silence, startMediaServer, tone } from './helpers.ts';
import { TURN_SKIP, type TurnServer, startTurnServer } from './turn-server.ts';

const HELLO = { start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello there.' } }] };
// The network tests do not touch storage beyond the call: one store is enough.
const STORE = STORES[0]!;

const candidateTypes = (sdp: string): string[] => [...sdp.matchAll(/^a=candidate:.* typ (\w+)/gm)].map((m) => m[1]!);

describe('WebRTC on networks as they are', () => {
  const secret = randomBytes(24).toString('base64url');
  let turn: TurnServer;
  let s: MediaServer;
  // One server for every case (a server start is the slow part): TURN is handed out, and a caller
  // not restricted to it still connects directly.
  before(async () => {
    if (!TURN_SKIP) turn = await startTurnServer(secret);
    s = await startMediaServer(STORE.name, {
      providers: fakeProviders(['hello'], { msPerChar: 30 }),
      env: {
        RTC_BIND_ADDRESS: '127.0.0.1',
        RTC_ICE_TCP: 'false',
        // TURN over TCP: the caller's network lets no UDP out.
        ...(turn ? { RTC_ICE_SERVERS: JSON.stringify([{ urls: [`turn:127.0.0.1:${turn.port}?transport=tcp`] }]), RTC_TURN_SECRET: secret } : {}),
      },
    });
  });
  after(async () => {
    await s?.close();
    await turn?.close();
  });

  it('relay only, TURN over TCP with per-call credentials: the call connects, both sides are heard', { timeout: 30_000, skip: TURN_SKIP }, async () => {
    const agentId = await s.flowAgent(HELLO);
    const c = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
    const { call_id: callId, access_token: accessToken } = c.json as { call_id: string; access_token: string };
    const offers: string[] = [];
    const dropped = await metricValue(s.baseUrl, 'switchboard_webrtc_rtp_dropped_total');
    const client = await WebCallClient.join({
      url: s.baseUrl,
      accessToken,
      transport: 'webrtc',
      iceAddress: '127.0.0.1',
      iceTransportPolicy: 'relay',
      timeoutMs: 15_000,
      rewriteSdp: (sdp, type) => {
        if (type === 'offer') offers.push(sdp);
        return sdp;
      },
    });
    // The caller offered only the address coturn relayed for it: no UDP of its own reached the server.
    assert.deepEqual([...new Set(candidateTypes(offers[0] ?? ''))], ['relay']);
    await client.waitFor('agent_stop_talking', 10_000);
    assert.ok(client.agentPcm().some((v) => Math.abs(v) > 1_000), 'the agent was heard through the relay');
    await client.play(tone(600));
    await client.play(silence(1_200));
    await client.waitFor((e) => e.type === 'update' && e.final && e.transcript.some((t) => t.role === 'user' && t.content === 'hello'), 10_000);
    await client.hangup();
    // The Node client wrote the payload type the answer named (werift's 96): none of its RTP was dropped.
    assert.equal(await metricValue(s.baseUrl, 'switchboard_webrtc_rtp_dropped_total'), dropped);
    // coturn allocated for this call's credentials: `<expiry>:<call id>`, under the shared secret.
    assert.match(turn.log(), new RegExp(`user <\\d+:${callId}>: incoming packet ALLOCATE processed, success`), 'coturn allocated for the per-call username');
    const media = (await s.api('GET', `/v2/get-call/${callId}`)).json.media;
    assert.equal(media.transport, 'webrtc');
    assert.ok(media.packets_in >= 50, `packets_in ${media.packets_in}`);
  });

  it('credentials not made with the secret are refused by coturn: no relay, no path', { timeout: 20_000, skip: TURN_SKIP }, async () => {
    const agentId = await s.flowAgent(HELLO);
    const { access_token: accessToken } = (await s.api('POST', '/v2/create-web-call', { agent_id: agentId })).json as { access_token: string };
    // The server's list, its credential forged: what a caller without the secret could make.
    const listed = await (await fetch(`${s.baseUrl}/v2/webrtc/ice-servers`, { headers: { authorization: `Bearer ${accessToken}` } })).json();
    const server = (listed as { ice_servers: Array<{ urls: string[]; username: string; credential: string }> }).ice_servers[0]!;
    assert.match(server.username, /^\d+:call_/);
    const pc = new RTCPeerConnection({ iceServers: [{ ...server, credential: 'forged' }], iceTransportPolicy: 'relay', iceUseIpv6: false, iceInterfaceAddresses: { udp4: '127.0.0.1', udp6: undefined } });
    try {
      pc.addTransceiver('audio', { direction: 'sendrecv' });
      await pc.setLocalDescription(await pc.createOffer());
      // Gathering ends once werift gives up on the refused allocation (it retries for about 6 s).
      await eventually(() => pc.iceGatheringState === 'complete', 15_000);
      assert.deepEqual(candidateTypes(pc.localDescription?.sdp ?? ''), [], 'no relay address without valid credentials');
      assert.match(turn.log(), new RegExp(`check_stun_auth: .*<${server.username}>`), 'coturn refused the username\'s credential');
      assert.doesNotMatch(turn.log(), new RegExp(`<${server.username}>: incoming packet ALLOCATE processed, success`));
    } finally {
      await pc.close();
    }
  });

  it('the answer keeps the offerer\'s Opus number; RTP of another type is dropped and counted, the negotiated one is the call\'s', { timeout: 30_000 }, async () => {
    const agentId = await s.flowAgent(HELLO);
    const { call_id: callId, access_token: accessToken } = (await s.api('POST', '/v2/create-web-call', { agent_id: agentId })).json as { call_id: string; access_token: string };
    // A raw werift peer (no client logic), so the test chooses each packet's payload type itself.
    const pc = new RTCPeerConnection({ iceServers: [], bundlePolicy: 'max-bundle', iceUseIpv6: false, iceInterfaceAddresses: { udp4: '127.0.0.1', udp6: undefined } });
    try {
      const channel = pc.createDataChannel('events', { negotiated: true, id: 0, ordered: true });
      const transceiver = pc.addTransceiver(new MediaStreamTrack({ kind: 'audio' }), { direction: 'sendrecv' });
      const received = new Set<number>();
      pc.onTrack.subscribe((track) => track.onReceiveRtp.subscribe((rtp) => received.add(rtp.header.payloadType)));
      await pc.setLocalDescription(await pc.createOffer());
      await eventually(() => pc.iceGatheringState === 'complete');
      const offered = opusPayloadTypeOf(pc.localDescription?.sdp ?? '');
      assert.equal(offered, 96, 'werift offers Opus as 96 (Chromium: 111)');
      const res = await fetch(`${s.baseUrl}/v2/webrtc/sessions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ sdp: pc.localDescription?.sdp }),
      });
      assert.equal(res.status, 201);
      const answer = ((await res.json()) as { sdp: string }).sdp;
      assert.equal(opusPayloadTypeOf(answer), offered, 'the answer names Opus with the offerer\'s number');
      await pc.setRemoteDescription({ type: 'answer', sdp: answer });
      await eventually(() => channel.readyState === 'open', 15_000);
      // The agent's greeting arrives with the negotiated type.
      await eventually(() => received.size > 0, 10_000);
      assert.deepEqual([...received], [offered]);

      const dtls = transceiver.sender.dtlsTransport;
      const ssrc = transceiver.sender.ssrc;
      // One 20 ms Opus frame of silence (TOC 0xf8: CELT fullband 20 ms; the rest is ignored).
      const frame = Buffer.from([0xf8, 0xff, 0xfe]);
      let sequence = 1;
      let timestamp = 0;
      const send = async (payloadType: number, count: number) => {
        for (let i = 0; i < count; i++) {
          await dtls.sendRtp(frame, new RtpHeader({ payloadType, ssrc, sequenceNumber: sequence++, timestamp: (timestamp += 960) }));
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      };
      const dropped = () => metricValue(s.baseUrl, 'switchboard_webrtc_rtp_dropped_total', { reason: 'payload_type' });
      const before = await dropped();
      await send(offered + 15, 30); // 111, Chromium's number for Opus, where 96 was negotiated
      await send(0, 10); // PCMU: offered by werift, not answered by the server
      await eventually(async () => (await dropped()) - before === 40 || undefined, 5_000).catch(() => undefined);
      assert.equal((await dropped()) - before, 40, 'every packet of another payload type is counted');
      await send(offered, 25);
      channel.send(JSON.stringify({ type: 'hangup' }));
      const call = await eventually(async () => {
        const c = (await s.api('GET', `/v2/get-call/${callId}`)).json;
        return c.call_status === 'ended' ? c : undefined;
      }, 10_000);
      // Only the negotiated type is the call's media; the sequence jump over the dropped ones is not loss to it either.
      assert.ok(call.media.packets_in > 0 && call.media.packets_in <= 25, `packets_in ${call.media.packets_in}`);
      assert.equal((await dropped()) - before, 40);
    } finally {
      await pc.close();
    }
  });
});
