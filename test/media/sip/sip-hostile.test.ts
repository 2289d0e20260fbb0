// Issue 24, hostile input on the SIP endpoint, from a raw UDP socket: malformed SIP gets 400 and
// creates nothing, an oversized SDP is refused (413), a flood of INVITEs from one address is
// rate-limited without exhausting the server, and RTP from an address other than the negotiated
// one is dropped.
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { after, before, describe, it } from 'node:test';
import type { SipTransport } from '../../../src/media/sip/sip.transport.ts';
import { type MediaServer, eventually, fakeProviders, startMediaServer } from '../helpers.ts';

const GREETING = { start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello.' } }] };

/** A UDP socket that collects what it receives. */
async function udp(): Promise<{ socket: dgram.Socket; port: number; received: Buffer[]; close(): void }> {
  const socket = dgram.createSocket('udp4');
  const received: Buffer[] = [];
  socket.on('message', (data) => received.push(data));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { socket, port: socket.address().port, received, close: () => socket.close() };
}

function invite(options: { to: string; sipPort: number; fromPort: number; callId: string; rtpPort: number; sdpPadding?: number }): Buffer {
  const sdp = [
    'v=0',
    'o=test 1 1 IN IP4 127.0.0.1',
    's=test',
    'c=IN IP4 127.0.0.1',
    't=0 0',
    `m=audio ${options.rtpPort} RTP/AVP 0 101`,
    'a=rtpmap:0 PCMU/8000',
    'a=rtpmap:101 telephone-event/8000',
    ...(options.sdpPadding ? [`a=x-padding:${'x'.repeat(options.sdpPadding)}`] : []),
    '',
  ].join('\r\n');
  return Buffer.from(
    [
      `INVITE sip:${options.to}@127.0.0.1:${options.sipPort} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${options.fromPort};branch=z9hG4bK${options.callId}`,
      'Max-Forwards: 70',
      `From: <sip:+14155550111@127.0.0.1:${options.fromPort}>;tag=a1`,
      `To: <sip:${options.to}@127.0.0.1>`,
      `Call-ID: ${options.callId}`,
      'CSeq: 1 INVITE',
      `Contact: <sip:caller@127.0.0.1:${options.fromPort}>`,
      'Content-Type: application/sdp',
      `Content-Length: ${Buffer.byteLength(sdp)}`,
      '',
      sdp,
    ].join('\r\n'),
  );
}

const statusOf = (data: Buffer) => Number(/^SIP\/2\.0 ([0-9]{3})/.exec(data.toString('latin1'))?.[1]);

describe('hostile input on the SIP endpoint', () => {
  let s: MediaServer;
  let sip: SipTransport;
  before(async () => {
    s = await startMediaServer('sqlite', { providers: fakeProviders([], { msPerChar: 20 }), env: { SIP_PORT: '0', SIP_INVITES_PER_MINUTE: '20', SIP_RTP_PORT_MIN: '43000', SIP_RTP_PORT_MAX: '43998' } });
    sip = s.app.transports.get('sip') as SipTransport;
    await sip.ready;
    const agentId = await s.flowAgent(GREETING);
    assert.equal((await s.api('POST', '/import-phone-number', { phone_number: '+14155550100', inbound_agent_id: agentId })).status, 201);
  });
  after(() => s.close());
  const calls = async () => (await s.api('POST', '/v2/list-calls', {})).json.length as number;

  it('answers malformed SIP with 400 and an oversized SDP with 413; nothing is created', { timeout: 15_000 }, async () => {
    const peer = await udp();
    try {
      const base = invite({ to: '+14155550100', sipPort: sip.port, fromPort: peer.port, callId: 'bad-1', rtpPort: 40000 }).toString('latin1');
      const malformed = [
        base.replace('CSeq: 1 INVITE', 'CSeq: one INVITE'),
        base.replace(/Call-ID: [^\r]*\r\n/, ''),
        base.replace('Content-Length: ', 'Content-Length: 9'),
        base.replace(' SIP/2.0\r\n', ' SIP/3.0\r\n'),
        base.replace('To: <', 'To <'),
      ];
      for (const [i, text] of malformed.entries()) {
        peer.received.length = 0;
        peer.socket.send(Buffer.from(text, 'latin1'), sip.port, '127.0.0.1');
        const reply = await eventually(() => peer.received[0], 3_000);
        assert.equal(statusOf(reply), 400, `case ${i}: ${reply.toString().split('\r\n')[0]}`);
      }
      peer.received.length = 0;
      peer.socket.send(invite({ to: '+14155550100', sipPort: sip.port, fromPort: peer.port, callId: 'big-1', rtpPort: 40000, sdpPadding: 5_000 }), sip.port, '127.0.0.1');
      assert.equal(statusOf(await eventually(() => peer.received[0], 3_000)), 413);
      assert.equal(await calls(), 0);
      assert.equal(sip.dialogCount, 0);
    } finally {
      peer.close();
    }
  });

  it('drops RTP from any address but the negotiated one; takes the negotiated stream and its digits', { timeout: 20_000 }, async () => {
    const peer = await udp();
    const media = await udp();
    const stray = await udp();
    try {
      peer.socket.send(invite({ to: '14155550100', sipPort: sip.port, fromPort: peer.port, callId: 'rtp-1', rtpPort: media.port }), sip.port, '127.0.0.1');
      const ok = await eventually(() => peer.received.find((m) => statusOf(m) === 200), 5_000);
      const answer = ok.toString('latin1');
      const rtpPort = Number(/m=audio ([0-9]+) /.exec(answer)?.[1]);
      const toTag = /To: [^\r]*;tag=([^;\r]+)/.exec(answer)?.[1];
      peer.socket.send(Buffer.from(`ACK sip:x@127.0.0.1:${sip.port} SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:${peer.port};branch=z9hG4bKack\r\nFrom: <sip:+14155550111@127.0.0.1>;tag=a1\r\nTo: <sip:14155550100@127.0.0.1>;tag=${toTag}\r\nCall-ID: rtp-1\r\nCSeq: 1 ACK\r\nContent-Length: 0\r\n\r\n`), sip.port, '127.0.0.1');
      const packet = (seq: number, payloadType = 0, payload = Buffer.alloc(160, 0xff)) => {
        const header = Buffer.alloc(12);
        header[0] = 0x80;
        header[1] = payloadType;
        header.writeUInt16BE(seq, 2);
        header.writeUInt32BE(seq * 160, 4);
        header.writeUInt32BE(1234, 8);
        return Buffer.concat([header, payload]);
      };
      for (let seq = 1; seq <= 30; seq++) stray.socket.send(packet(seq), rtpPort, '127.0.0.1');
      for (let seq = 1; seq <= 10; seq++) media.socket.send(packet(seq), rtpPort, '127.0.0.1');
      // One RFC 4733 event (digit 5) in three packets with one timestamp, and the end bit on the last.
      for (const flags of [0x0a, 0x0a, 0x8a]) media.socket.send(packet(11, 101, Buffer.from([5, flags, 0x00, 0xa0])), rtpPort, '127.0.0.1');
      await new Promise((r) => setTimeout(r, 300));
      const bye = `BYE sip:x@127.0.0.1:${sip.port} SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:${peer.port};branch=z9hG4bKbye\r\nFrom: <sip:+14155550111@127.0.0.1>;tag=a1\r\nTo: <sip:14155550100@127.0.0.1>;tag=${toTag}\r\nCall-ID: rtp-1\r\nCSeq: 2 BYE\r\nContent-Length: 0\r\n\r\n`;
      peer.socket.send(Buffer.from(bye), sip.port, '127.0.0.1');
      const ended = await eventually(async () => (await s.api('POST', '/v2/list-calls', {})).json.find((c: any) => c.telephony_identifier === 'rtp-1' && c.call_status === 'ended'));
      assert.equal(ended.media.packets_in, 13, 'the 10 audio packets and the 3 of the digit; none of the 30 stray ones');
      assert.equal(ended.media.packets_lost, 0);
      assert.equal(ended.from_number, '+14155550111');
    } finally {
      peer.close();
      media.close();
      stray.close();
    }
  });

  it('rate-limits a flood of INVITEs from one address and stays available', { timeout: 30_000 }, async () => {
    const flooder = await udp();
    const before = await calls();
    try {
      for (let i = 0; i < 300; i++) {
        flooder.socket.send(invite({ to: '+14155550100', sipPort: sip.port, fromPort: flooder.port, callId: `flood-${i}`, rtpPort: 40000 }), sip.port, '127.0.0.1');
      }
      await new Promise((r) => setTimeout(r, 2_000));
      const admitted = (await calls()) - before;
      assert.ok(admitted <= 20, `${admitted} calls admitted of 300 INVITEs: at most the 20 per minute the source may send`);
      const dropped = await s.api('GET', '/metrics');
      // Some of the burst may be dropped by the kernel's receive buffer before the endpoint reads it.
      const limited = Number(/switchboard_sip_dropped_total\{reason="rate_limited"\} ([0-9]+)/.exec(String(dropped.bytes))?.[1] ?? 0);
      assert.ok(limited >= 100, `${limited} INVITEs refused by the rate limit`);
      // The endpoint still answers.
      const other = await udp();
      try {
        other.socket.send(Buffer.from(`OPTIONS sip:127.0.0.1:${sip.port} SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:${other.port};branch=z9hG4bKo\r\nFrom: <sip:o@127.0.0.1>;tag=o\r\nTo: <sip:127.0.0.1>\r\nCall-ID: opt-1\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n`), sip.port, '127.0.0.1');
        assert.equal(statusOf(await eventually(() => other.received[0], 3_000)), 200);
      } finally {
        other.close();
      }
    } finally {
      flooder.close();
    }
  });
});
