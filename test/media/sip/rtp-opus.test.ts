// Issue 24: the SIP endpoint's codecs, in process. The SDP choice (Opus first when offered, G.711
// otherwise; telephone-event follows the offer's clock), our offer and answer, and an RTP session
// on Opus over real UDP sockets: 48 kHz timestamps, 16 kHz audio both ends, a lost packet
// repaired from the next one's FEC, keys pressed at the event's clock.
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { after, describe, it } from 'node:test';
import { RtpSession } from '../../../src/media/sip/rtp.ts';
import { createRtpCodec, type RtpMedia } from '../../../src/media/sip/rtp-codec.ts';
import { answerSdp, chooseCodec, offerSdp } from '../../../src/media/sip/sdp.ts';
import { parseSdpAudio, type SdpAudio } from '../../../src/media/sip/sip-message.ts';
import type { SipTransport } from '../../../src/media/sip/sip.transport.ts';
import { loadConfig } from '../../../src/config/config.ts';
import { fakeProviders, startMediaServer } from '../helpers.ts';

const sdp = (...lines: string[]) => ['v=0', 'o=- 1 1 IN IP4 127.0.0.1', 's=-', 'c=IN IP4 127.0.0.1', 't=0 0', ...lines, ''].join('\r\n');
const parsed = (text: string): SdpAudio => {
  const audio = parseSdpAudio(text);
  assert.ok(!('refusal' in audio), JSON.stringify(audio));
  return audio;
};

describe('SDP: the codec chosen', () => {
  it('takes Opus when offered, even listed after G.711, with telephone-event at 48 kHz where offered', () => {
    const offer = parsed(sdp('m=audio 4000 RTP/AVP 0 8 111 110 101', 'a=rtpmap:111 opus/48000/2', 'a=fmtp:111 useinbandfec=1;usedtx=1', 'a=rtpmap:110 telephone-event/48000', 'a=rtpmap:101 telephone-event/8000'));
    assert.deepEqual(chooseCodec(offer), { codec: 'opus', payloadType: 111, eventPayloadType: 110, eventClockRate: 48_000, dtx: true, ptimeMs: 20 });
  });

  it('follows the offer: Opus with telephone-event only at 8 kHz keeps it at 8 kHz', () => {
    const offer = parsed(sdp('m=audio 4000 RTP/AVP 107 101', 'a=rtpmap:107 opus/48000/2', 'a=rtpmap:101 telephone-event/8000'));
    assert.deepEqual(chooseCodec(offer), { codec: 'opus', payloadType: 107, eventPayloadType: 101, eventClockRate: 8000, dtx: false, ptimeMs: 20 });
  });

  it('keeps G.711 for a peer without Opus; an Opus at another clock is not Opus', () => {
    const offer = parsed(sdp('m=audio 4000 RTP/AVP 96 8 0 101', 'a=rtpmap:96 opus/16000', 'a=rtpmap:101 telephone-event/8000'));
    assert.deepEqual(chooseCodec(offer), { codec: 'pcmu', payloadType: 0, eventPayloadType: 101, eventClockRate: 8000, dtx: false, ptimeMs: 20 });
    assert.equal(chooseCodec(parsed(sdp('m=audio 4000 RTP/AVP 9')))?.codec, undefined);
  });

  it('answers Opus with its fmtp (FEC, mono, 16 kHz playback) and the chosen telephone-event', () => {
    const answer = answerSdp('127.0.0.1', 4002, { codec: 'opus', payloadType: 111, eventPayloadType: 110, eventClockRate: 48_000, dtx: false, ptimeMs: 20 });
    assert.match(answer, /^m=audio 4002 RTP\/AVP 111 110\r$/m);
    assert.match(answer, /^a=rtpmap:111 opus\/48000\/2\r$/m);
    assert.match(answer, /^a=fmtp:111 .*useinbandfec=1/m);
    assert.match(answer, /^a=fmtp:111 .*maxplaybackrate=16000/m);
    assert.match(answer, /^a=fmtp:111 .*stereo=0/m);
    assert.match(answer, /^a=rtpmap:110 telephone-event\/48000\r$/m);
  });

  it('offers Opus first, then PCMU and PCMA, with telephone-event at both clocks', () => {
    const offer = parsed(offerSdp('127.0.0.1', 4004));
    assert.deepEqual(
      offer.formats.map((f) => `${f.payloadType} ${f.encoding}/${f.clockRate}`),
      ['96 opus/48000', '0 pcmu/8000', '8 pcma/8000', '102 telephone-event/48000', '101 telephone-event/8000'],
    );
    assert.match(offer.formats[0]?.fmtp ?? '', /useinbandfec=1/);
  });

  it('follows SIP_CODECS: its order is the preference, and a codec left out is neither offered nor taken', () => {
    const offer = parsed(sdp('m=audio 4000 RTP/AVP 111 8 0 101', 'a=rtpmap:111 opus/48000/2', 'a=rtpmap:101 telephone-event/8000'));
    assert.equal(chooseCodec(offer, ['pcma', 'pcmu'])?.codec, 'pcma');
    assert.equal(chooseCodec(offer, ['pcmu', 'opus'])?.codec, 'pcmu');
    assert.equal(chooseCodec(parsed(sdp('m=audio 4000 RTP/AVP 111', 'a=rtpmap:111 opus/48000/2')), ['pcmu', 'pcma']), null);
    assert.deepEqual(
      parsed(offerSdp('127.0.0.1', 4004, ['pcmu', 'pcma'])).formats.map((f) => `${f.payloadType} ${f.encoding}/${f.clockRate}`),
      ['0 pcmu/8000', '8 pcma/8000', '101 telephone-event/8000'],
    );
    assert.deepEqual(loadConfig({ SIP_PORT: '0', SIP_CODECS: 'PCMU, opus' }).sip?.codecs, ['pcmu', 'opus']);
    assert.deepEqual(loadConfig({ SIP_PORT: '0' }).sip?.codecs, ['opus', 'pcmu', 'pcma']);
    for (const bad of ['pcmu,g729', 'pcmu,pcmu']) assert.throws(() => loadConfig({ SIP_PORT: '0', SIP_CODECS: bad }), /SIP_CODECS/);
  });

  it('a server with SIP_CODECS=pcmu,pcma answers an offer of Opus and PCMU with PCMU', { timeout: 20_000 }, async () => {
    const s = await startMediaServer('sqlite', { providers: fakeProviders([]), env: { SIP_PORT: '0', SIP_CODECS: 'pcmu,pcma', SIP_RTP_PORT_MIN: '47000', SIP_RTP_PORT_MAX: '47998' } });
    const caller = await udp();
    try {
      const sip = s.app.transports.get('sip') as SipTransport;
      await sip.ready;
      const agentId = await s.flowAgent({ start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello.' } }] });
      assert.equal((await s.api('POST', '/import-phone-number', { phone_number: '+14155550620', inbound_agent_id: agentId })).status, 201);
      const body = sdp(`m=audio ${caller.port} RTP/AVP 111 0 101`, 'a=rtpmap:111 opus/48000/2', 'a=rtpmap:101 telephone-event/8000');
      const request = [
        `INVITE sip:+14155550620@127.0.0.1:${sip.port} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${caller.port};branch=z9hG4bKcodecs1`,
        'Max-Forwards: 70',
        `From: <sip:+14155550111@127.0.0.1:${caller.port}>;tag=c1`,
        'To: <sip:+14155550620@127.0.0.1>',
        'Call-ID: codecs-1',
        'CSeq: 1 INVITE',
        `Contact: <sip:caller@127.0.0.1:${caller.port}>`,
        'Content-Type: application/sdp',
        `Content-Length: ${Buffer.byteLength(body)}`,
        '',
        body,
      ].join('\r\n');
      caller.socket.send(Buffer.from(request), sip.port, '127.0.0.1');
      await waitFor(() => caller.packets.some((p) => p.toString('latin1').startsWith('SIP/2.0 200')), 10_000);
      const ok = caller.packets.find((p) => p.toString('latin1').startsWith('SIP/2.0 200'))!.toString('latin1');
      assert.match(ok, /^m=audio [0-9]+ RTP\/AVP 0 101\r$/m);
    } finally {
      caller.socket.close();
      await s.close();
    }
  });
});

/** A UDP socket on loopback and the packets it receives. */
async function udp(): Promise<{ socket: dgram.Socket; port: number; packets: Buffer[] }> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const packets: Buffer[] = [];
  socket.on('message', (data) => packets.push(data));
  return { socket, port: socket.address().port, packets };
}

const OPUS: RtpMedia = { codec: 'opus', payloadType: 111, eventPayloadType: 110, eventClockRate: 48_000, dtx: false, ptimeMs: 20 };
const tone = (samples: number, rate: number) => Int16Array.from({ length: samples }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)));
const rms = (pcm: Int16Array) => Math.sqrt(pcm.reduce((sum, v) => sum + v * v, 0) / Math.max(1, pcm.length));

describe('RTP on Opus', () => {
  const open: Array<{ close(): void }> = [];
  after(() => {
    for (const o of open) o.close();
  });

  it('sends 20 ms packets on the 48 kHz clock; the far end decodes 16 kHz audio and repairs a lost packet', async () => {
    const wire = await udp();
    const receiver = await udp();
    open.push(wire.socket);
    // The sender's RTP goes to `wire`, which relays it to the receiver's session, all but packet 20.
    const sender = new RtpSession({ socket: (await udp()).socket, codec: createRtpCodec(OPUS), payloadType: 111, eventPayloadType: 110, eventClockRate: 48_000, remote: { address: '127.0.0.1', port: wire.port } });
    const receiving = new RtpSession({ socket: receiver.socket, codec: createRtpCodec(OPUS), payloadType: 111, eventPayloadType: 110, eventClockRate: 48_000, remote: { address: '127.0.0.1', port: wire.port } });
    open.push(sender, receiving);
    const heard: Int16Array[] = [];
    receiving.start({ audio: (pcm) => heard.push(pcm), dtmf: () => {} });
    sender.send(tone(16_000, 16_000)); // 1 s: 50 packets
    await waitFor(() => wire.packets.length >= 50);
    assert.equal(wire.packets.length, 50);
    for (const [i, packet] of wire.packets.entries()) {
      assert.equal((packet[1] as number) & 0x7f, 111);
      if (i > 0) assert.equal((packet.readUInt32BE(4) - wire.packets[i - 1]!.readUInt32BE(4)) >>> 0, 960, 'timestamps step 960 a 20 ms packet');
    }
    for (const [i, packet] of wire.packets.entries()) if (i !== 20) wire.socket.send(packet, receiver.port, '127.0.0.1');
    await waitFor(() => receiving.stats().packetsIn >= 49);
    const stats = receiving.stats();
    assert.equal(stats.packetsLost, 1);
    // Every 20 ms is there, the lost one rebuilt: 50 frames of 320 samples.
    assert.equal(heard.reduce((n, p) => n + p.length, 0), 50 * 320);
    // Packets 0-19, then the repair of 20 (handed on before 21's audio), then 21-49.
    const repaired = heard[20];
    assert.equal(heard.length, 50);
    assert.ok(repaired && repaired.length === 320 && rms(repaired) > 1000, `the lost frame is rebuilt as the tone, rms ${repaired && rms(repaired)}`);
    assert.equal(sender.codec.name, 'opus');
    assert.equal(sender.codec.clockRate, 48_000);
  });

  it('bounds the repairs: a peer whose every packet claims a second lost at most doubles its audio', async () => {
    const peer = await udp();
    const receiving = new RtpSession({ socket: (await udp()).socket, codec: createRtpCodec(OPUS), payloadType: 111, eventPayloadType: null, remote: { address: '127.0.0.1', port: peer.port } });
    open.push(receiving, peer.socket);
    let heard = 0;
    receiving.start({ audio: (pcm) => (heard += pcm.length), dtmf: () => {} });
    const encoder = createRtpCodec(OPUS);
    const frame = Buffer.from(encoder.encode(tone(320, 16_000)));
    encoder.close();
    for (let i = 0; i < 20; i++) {
      // Each packet 10 on in the sequence and a second on in time: 9 lost, 1 s to fill.
      const header = Buffer.alloc(12);
      header[0] = 0x80;
      header[1] = 111;
      header.writeUInt16BE(i * 10, 2);
      header.writeUInt32BE(i * 48_000, 4);
      header.writeUInt32BE(1234, 8);
      peer.socket.send(Buffer.concat([header, frame]), receiving.localPort, '127.0.0.1');
    }
    await waitFor(() => receiving.stats().packetsIn >= 20);
    assert.equal(receiving.stats().packetsLost, 19 * 9);
    assert.ok(heard <= 2 * 20 * 320, `${heard} samples heard from 20 packets of 320`);
  });

  it('presses keys at the event clock the far end took (48 kHz durations), and the far end reads them once', async () => {
    const a = await udp();
    const b = await udp();
    const keys: string[] = [];
    const pressing = new RtpSession({ socket: a.socket, codec: createRtpCodec(OPUS), payloadType: 111, eventPayloadType: 110, eventClockRate: 48_000, remote: { address: '127.0.0.1', port: b.port } });
    const wire = b.packets;
    const reading = new RtpSession({ socket: (await udp()).socket, codec: createRtpCodec(OPUS), payloadType: 111, eventPayloadType: 110, eventClockRate: 48_000, remote: { address: '127.0.0.1', port: b.port } });
    open.push(pressing, reading, b.socket);
    reading.start({ audio: () => {}, dtmf: (digit) => keys.push(digit) });
    await pressing.sendDigits('5');
    await waitFor(() => wire.length >= 7);
    const events = wire.filter((p) => ((p[1] as number) & 0x7f) === 110);
    assert.equal(events[0]?.[12], 5);
    // 100 ms of tone: the duration ends at 4 800 ticks of the 48 kHz clock.
    assert.equal(events.at(-1)?.readUInt16BE(14), 4_800);
    assert.ok(((events.at(-1)?.[13] as number) & 0x80) !== 0, 'the end bit');
    for (const p of events) b.socket.send(p, reading.localPort, '127.0.0.1');
    await waitFor(() => keys.length >= 1);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(keys, ['5']);
  });
});

async function waitFor(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
