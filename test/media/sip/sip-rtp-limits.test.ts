// Issue 24, a SIP call's RTP from a raw UDP caller: a flood from the negotiated address is held to
// the call's inbound limits (dropped before decoding, counted) and the call goes on to take its
// branch; the far end's ptime decides the length of the packets we send (G.711 at 30 and 40 ms)
// and its packets of that length are heard; in process, the ptime chosen for each codec and
// maxptime, Opus packets of 40 ms both ways, and an Opus packet's length read from its TOC.
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { after, before, describe, it } from 'node:test';
import { encodeG711, type G711Codec } from '../../../src/media/codec/g711.ts';
import { RtpSession } from '../../../src/media/sip/rtp.ts';
import { createRtpCodec, opusPacketSamples } from '../../../src/media/sip/rtp-codec.ts';
import { chooseCodec, sendPtimeMs } from '../../../src/media/sip/sdp.ts';
import { parseSdpAudio } from '../../../src/media/sip/sip-message.ts';
import type { SipTransport } from '../../../src/media/sip/sip.transport.ts';
import { type MediaServer, eventually, fakeProviders, startMediaServer } from '../helpers.ts';

const PAYLOAD_TYPES: Record<G711Codec, number> = { pcmu: 0, pcma: 8 };

/** A department question; "sales" takes the caller to the end node. */
const DEPARTMENTS = {
  start_node_id: 'ask',
  nodes: [
    { id: 'ask', type: 'conversation', instruction: { type: 'static_text', text: 'Which department?' }, edges: [{ id: 'sales', destination_node_id: 'bye', transition_condition: { type: 'keyword', keywords: ['sales'] } }] },
    { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Sales. Goodbye.' } },
  ],
};

async function udp(): Promise<{ socket: dgram.Socket; port: number; received: Buffer[]; close(): void }> {
  const socket = dgram.createSocket('udp4');
  const received: Buffer[] = [];
  socket.on('message', (data) => received.push(data));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { socket, port: socket.address().port, received, close: () => socket.close() };
}

const text = (data: Buffer) => data.toString('latin1');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** 8 kHz audio: a 300 Hz tone (speech to the energy detector) or silence. */
const tone8k = (ms: number) => Int16Array.from({ length: (ms * 8000) / 1000 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / 8000)));
const silence8k = (ms: number) => new Int16Array((ms * 8000) / 1000);

/** The caller's side of one call: its SIP and RTP sockets, our answer's SDP, and its outgoing RTP stream. */
interface RawCall {
  sip: Awaited<ReturnType<typeof udp>>;
  rtp: Awaited<ReturnType<typeof udp>>;
  answer: string;
  remotePort: number;
  stream: { seq: number; timestamp: number; codec: G711Codec };
}

/** INVITEs `to` from a raw socket offering `codec` (with `ptime` lines as given) and ACKs the 200. */
async function dialIn(sipPort: number, options: { to: string; callId: string; codec: G711Codec; sdpLines?: string[] }): Promise<RawCall> {
  const sip = await udp();
  const rtp = await udp();
  const pt = PAYLOAD_TYPES[options.codec];
  const sdp = ['v=0', 'o=test 1 1 IN IP4 127.0.0.1', 's=test', 'c=IN IP4 127.0.0.1', 't=0 0', `m=audio ${rtp.port} RTP/AVP ${pt} 101`, `a=rtpmap:${pt} ${options.codec.toUpperCase()}/8000`, 'a=rtpmap:101 telephone-event/8000', ...(options.sdpLines ?? []), ''].join('\r\n');
  const head = (method: string, cseq: string, extra: string[]) =>
    [`${method} sip:${options.to}@127.0.0.1:${sipPort} SIP/2.0`, `Via: SIP/2.0/UDP 127.0.0.1:${sip.port};branch=z9hG4bK${options.callId}${method}`, 'Max-Forwards: 70', `From: <sip:+14155550111@127.0.0.1:${sip.port}>;tag=a1`, ...extra, `Call-ID: ${options.callId}`, `CSeq: ${cseq}`, `Contact: <sip:caller@127.0.0.1:${sip.port}>`];
  sip.socket.send(Buffer.from([...head('INVITE', '1 INVITE', [`To: <sip:${options.to}@127.0.0.1>`]), 'Content-Type: application/sdp', `Content-Length: ${Buffer.byteLength(sdp)}`, '', sdp].join('\r\n')), sipPort, '127.0.0.1');
  const ok = text(await eventually(() => sip.received.find((m) => text(m).startsWith('SIP/2.0 200')), 10_000));
  const to = /^To: (.*)$/im.exec(ok)?.[1]?.trim() ?? '';
  sip.socket.send(Buffer.from([...head('ACK', '1 ACK', [`To: ${to}`]), 'Content-Length: 0', '', ''].join('\r\n')), sipPort, '127.0.0.1');
  const answer = ok.slice(ok.indexOf('\r\n\r\n') + 4);
  const remotePort = Number(/^m=audio ([0-9]+)/m.exec(answer)?.[1]);
  return { sip, rtp, answer, remotePort, stream: { seq: 1, timestamp: 0, codec: options.codec } };
}

function rtpPacket(call: RawCall, payload: Uint8Array): Buffer {
  const header = Buffer.alloc(12);
  header[0] = 0x80;
  header[1] = PAYLOAD_TYPES[call.stream.codec];
  header.writeUInt16BE(call.stream.seq & 0xffff, 2);
  header.writeUInt32BE(call.stream.timestamp >>> 0, 4);
  header.writeUInt32BE(0x5eed, 8);
  call.stream.seq += 1;
  call.stream.timestamp += payload.length;
  return Buffer.concat([header, payload]);
}

/** Sends `pcm` in real time in packets of `ptimeMs`; returns the packets sent. */
async function speak(call: RawCall, pcm: Int16Array, ptimeMs: number): Promise<number> {
  const samples = (8000 * ptimeMs) / 1000;
  const start = performance.now();
  let sent = 0;
  for (let offset = 0; offset + samples <= pcm.length; offset += samples, sent++) {
    call.rtp.socket.send(rtpPacket(call, encodeG711(call.stream.codec, pcm.subarray(offset, offset + samples))), call.remotePort, '127.0.0.1');
    const due = start + (sent + 1) * ptimeMs;
    await sleep(Math.max(0, due - performance.now()));
  }
  return sent;
}

/** Speaks until the agent hangs up (its BYE), answering the BYE. */
async function speakUntilBye(call: RawCall, ptimeMs: number, timeoutMs: number): Promise<number> {
  let sent = await speak(call, tone8k(600), ptimeMs);
  const until = Date.now() + timeoutMs;
  let bye: Buffer | undefined;
  while (!(bye = call.sip.received.find((m) => text(m).startsWith('BYE ')))) {
    if (Date.now() > until) throw new Error('the agent did not hang up');
    sent += await speak(call, silence8k(200), ptimeMs);
  }
  const request = text(bye);
  const headers = request.split('\r\n').filter((line) => /^(Via|From|To|Call-ID|CSeq):/i.test(line));
  call.sip.socket.send(Buffer.from(['SIP/2.0 200 OK', ...headers, 'Content-Length: 0', '', ''].join('\r\n')), Number(/^Via: SIP\/2\.0\/UDP [^:]+:([0-9]+)/m.exec(request)?.[1] ?? 0) || call.remotePort, '127.0.0.1');
  return sent;
}

describe("a SIP call's RTP: limits and packet lengths", () => {
  let s: MediaServer;
  let sip: SipTransport;
  let script: ReturnType<typeof fakeProviders>;
  before(async () => {
    script = fakeProviders([], { msPerChar: 10 });
    s = await startMediaServer('sqlite', { providers: script, env: { SIP_PORT: '0', SIP_RTP_PORT_MIN: '44000', SIP_RTP_PORT_MAX: '44998' } });
    sip = s.app.transports.get('sip') as SipTransport;
    await sip.ready;
    const agentId = await s.flowAgent(DEPARTMENTS);
    assert.equal((await s.api('POST', '/import-phone-number', { phone_number: '+14155550730', inbound_agent_id: agentId })).status, 201);
  });
  after(async () => {
    await s?.close();
  });

  const ended = (callId: string) => eventually(async () => (await s.api('POST', '/v2/list-calls', {})).json.find((c: any) => c.telephony_identifier === callId && c.call_status === 'ended'), 10_000);
  const droppedForRate = async () => Number(/switchboard_sip_rtp_dropped_total\{reason="rate"\} ([0-9]+)/.exec(String((await s.api('GET', '/metrics')).bytes))?.[1] ?? 0);

  it('holds a flood from the negotiated address to the call\'s limits, drops and counts the rest, and the call takes its branch', { timeout: 30_000 }, async () => {
    script.stt.push('sales please');
    const call = await dialIn(sip.port, { to: '+14155550730', callId: 'rtp-flood-1', codec: 'pcmu' });
    try {
      const droppedBefore = await droppedForRate();
      // 3 000 packets of 20 ms (a minute of audio) as fast as the socket takes them.
      const silentPayload = encodeG711('pcmu', silence8k(20));
      const floodStart = performance.now();
      for (let batch = 0; batch < 30; batch++) {
        for (let i = 0; i < 100; i++) call.rtp.socket.send(rtpPacket(call, silentPayload), call.remotePort, '127.0.0.1');
        await new Promise((r) => setImmediate(r));
      }
      await sleep(300);
      const floodSeconds = (performance.now() - floodStart) / 1000;
      const dropped = (await droppedForRate()) - droppedBefore;
      // The kernel's receive buffer may drop part of the burst before the endpoint reads it.
      assert.ok(dropped >= 500, `${dropped} of the flood's packets dropped over the limits`);
      // The limits refill at real time: by the time the caller speaks, it is heard whole.
      await sleep(1_000);
      const spoken = await speakUntilBye(call, 20, 10_000);
      const result = await ended('rtp-flood-1');
      assert.equal(result.disconnection_reason, 'agent_hangup');
      const lines = (result.transcript_object as Array<{ role: string; content: string }>).map((u) => `${u.role}: ${u.content}`);
      assert.ok(lines.includes('user: sales please') && lines.includes('agent: Sales. Goodbye.'), lines.join(' | '));
      // What was read of the flood: a second's audio (50 packets of 20 ms) and real time while it lasted.
      const floodRead = result.media.packets_in - spoken;
      assert.ok(floodRead <= 50 + Math.ceil(50 * (floodSeconds + 0.05)), `${floodRead} flood packets read in ${floodSeconds.toFixed(2)} s`);
    } finally {
      call.sip.close();
      call.rtp.close();
    }
  });

  for (const [codec, ptimeMs] of [['pcmu', 40], ['pcma', 30]] as const) {
    it(`sends ${codec} in the ${ptimeMs} ms packets the caller's ptime asks for, and hears its ${ptimeMs} ms packets`, { timeout: 30_000 }, async () => {
      script.stt.push('sales please');
      const callId = `rtp-ptime-${ptimeMs}`;
      const call = await dialIn(sip.port, { to: '+14155550730', callId, codec, sdpLines: [`a=ptime:${ptimeMs}`] });
      try {
        assert.match(call.answer, new RegExp(`^a=ptime:${ptimeMs}\\r$`, 'm'));
        await speakUntilBye(call, ptimeMs, 10_000);
        const result = await ended(callId);
        const lines = (result.transcript_object as Array<{ role: string; content: string }>).map((u) => `${u.role}: ${u.content}`);
        assert.ok(lines.includes('user: sales please') && lines.includes('agent: Sales. Goodbye.'), lines.join(' | '));
        const audio = call.rtp.received.filter((p) => ((p[1] as number) & 0x7f) === PAYLOAD_TYPES[codec]);
        assert.ok(audio.length >= 5, `${audio.length} packets of the agent's audio`);
        const samples = (8000 * ptimeMs) / 1000;
        for (const [i, packet] of audio.entries()) {
          assert.equal(packet.length - 12, samples, `packet ${i} holds ${ptimeMs} ms`);
          if (i > 0 && ((packet[1] as number) & 0x80) === 0) assert.equal((packet.readUInt32BE(4) - audio[i - 1]!.readUInt32BE(4)) >>> 0, samples);
        }
      } finally {
        call.sip.close();
        call.rtp.close();
      }
    });
  }
});

describe('packet lengths (ptime) in process', () => {
  const sdp = (...lines: string[]) => ['v=0', 'o=- 1 1 IN IP4 127.0.0.1', 's=-', 'c=IN IP4 127.0.0.1', 't=0 0', ...lines, ''].join('\r\n');

  it('reads ptime and maxptime, the stream\'s own over the session\'s', () => {
    const audio = parseSdpAudio(sdp('a=ptime:30', 'm=audio 4000 RTP/AVP 0', 'a=maxptime:40'));
    assert.ok(!('refusal' in audio));
    assert.equal(audio.ptimeMs, 30);
    assert.equal(audio.maxptimeMs, 40);
    const own = parseSdpAudio(sdp('a=ptime:30', 'm=audio 4000 RTP/AVP 0', 'a=ptime:10'));
    assert.ok(!('refusal' in own) && own.ptimeMs === 10 && own.maxptimeMs === null);
  });

  it('sends what the far end asks for, within its maxptime and the codec\'s lengths', () => {
    assert.equal(sendPtimeMs('pcmu', null, null), 20);
    assert.equal(sendPtimeMs('pcmu', 30, null), 30);
    assert.equal(sendPtimeMs('pcma', 40, 30), 30);
    assert.equal(sendPtimeMs('pcmu', 240, null), 60);
    assert.equal(sendPtimeMs('pcmu', 5, null), 10);
    assert.equal(sendPtimeMs('opus', 30, null), 20, 'Opus has no 30 ms frame: the longest shorter one');
    assert.equal(sendPtimeMs('opus', 60, null), 60);
    assert.equal(sendPtimeMs('opus', null, 10), 10);
    const offer = parseSdpAudio(sdp('m=audio 4000 RTP/AVP 111', 'a=rtpmap:111 opus/48000/2', 'a=ptime:40'));
    assert.ok(!('refusal' in offer));
    assert.equal(chooseCodec(offer)?.ptimeMs, 40);
  });

  it('reads an Opus packet\'s length from its TOC byte', () => {
    assert.equal(opusPacketSamples(Buffer.from([(1 << 3) | 0, 0]), 16_000), 320, 'SILK 20 ms, one frame');
    assert.equal(opusPacketSamples(Buffer.from([(3 << 3) | 1, 0]), 16_000), 1_920, 'SILK 60 ms, two frames');
    assert.equal(opusPacketSamples(Buffer.from([(31 << 3) | 3, 0x83]), 16_000), 960, 'CELT 20 ms, three frames (code 3)');
    assert.equal(opusPacketSamples(Buffer.from([(31 << 3) | 3, 48]), 16_000), 1_920, 'at most 120 ms');
    assert.equal(opusPacketSamples(Buffer.alloc(0), 16_000), 0);
  });

  it('sends Opus in 40 ms packets when asked, and the far end decodes them whole', async () => {
    const wire = await udp();
    const receiverSocket = await udp();
    const media = { codec: 'opus', payloadType: 111, eventPayloadType: null, eventClockRate: 48_000, dtx: false, ptimeMs: 40 } as const;
    const sender = new RtpSession({ socket: (await udp()).socket, codec: createRtpCodec(media), payloadType: 111, eventPayloadType: null, remote: { address: '127.0.0.1', port: wire.port }, ptimeMs: 40 });
    const receiver = new RtpSession({ socket: receiverSocket.socket, codec: createRtpCodec(media), payloadType: 111, eventPayloadType: null, remote: { address: '127.0.0.1', port: wire.port } });
    const heard: Int16Array[] = [];
    receiver.start({ audio: (pcm) => heard.push(pcm), dtmf: () => {} });
    try {
      sender.send(Int16Array.from({ length: 16_000 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 16_000))));
      await eventually(() => wire.received.length >= 25 || undefined, 3_000);
      assert.equal(wire.received.length, 25, '1 s in 40 ms packets');
      for (const [i, packet] of wire.received.entries()) if (i > 0) assert.equal((packet.readUInt32BE(4) - wire.received[i - 1]!.readUInt32BE(4)) >>> 0, 1_920);
      for (const packet of wire.received) wire.socket.send(packet, receiver.localPort, '127.0.0.1');
      await eventually(() => heard.length >= 25 || undefined, 3_000);
      assert.ok(heard.every((pcm) => pcm.length === 640), 'each packet decoded to 40 ms at 16 kHz');
    } finally {
      sender.close();
      receiver.close();
      wire.close();
    }
  });
});
