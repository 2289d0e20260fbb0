// Issue 24: SIP over TCP on the server's own SIP endpoint (RFC 3261 18.3). baresip (Debian) calls in
// over TCP and answers our call over TCP (its termination_uri says `;transport=tcp`); a raw socket
// written here checks the framing (two messages in one segment, one message in pieces, the
// keep-alive ping) and the hostile cases: a sender that trickles its headers, an oversized
// message, a message without Content-Length, a flood of connections from one address, and an
// idle connection, each closed without harm while the endpoint goes on answering.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { SipTransport } from '../../../src/media/sip/sip.transport.ts';
import { type MediaServer, eventually, fakeProviders, startMediaServer } from '../helpers.ts';
import { Baresip, NO_BARESIP, hasBaresip } from './baresip.ts';

const GREETING = { start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello, you have reached the front desk of the clinic.' } }] };
const CALLING = { start_node_id: 'hi', nodes: [{ id: 'hi', type: 'end', instruction: { type: 'static_text', text: 'Hello, this is the clinic calling about your appointment. Goodbye.' } }] };

/** A raw TCP connection that keeps what it receives and whether the server closed it. */
async function connect(port: number): Promise<{ socket: net.Socket; text: () => string; closed: Promise<void>; isClosed: () => boolean }> {
  const socket = net.connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  let closedFlag = false;
  const closed = new Promise<void>((resolve) => socket.on('close', () => ((closedFlag = true), resolve())));
  socket.on('data', (chunk) => chunks.push(chunk));
  socket.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return { socket, text: () => Buffer.concat(chunks).toString('latin1'), closed, isClosed: () => closedFlag };
}

const options = (callId: string, port: number, extra = '') =>
  `OPTIONS sip:127.0.0.1:${port} SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:5999;branch=z9hG4bK${callId}\r\nFrom: <sip:o@127.0.0.1>;tag=o\r\nTo: <sip:127.0.0.1>\r\nCall-ID: ${callId}\r\nCSeq: 1 OPTIONS\r\n${extra}Content-Length: 0\r\n\r\n`;

const within = (promise: Promise<void>, ms: number) => Promise.race([promise.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

describe('SIP over TCP', () => {
  let s: MediaServer;
  let sip: SipTransport;
  before(async () => {
    s = await startMediaServer('sqlite', {
      providers: fakeProviders([], { msPerChar: 15 }),
      env: {
        SIP_PORT: '0',
        SIP_RTP_PORT_MIN: '47000',
        SIP_RTP_PORT_MAX: '47998',
        SIP_TCP_CONNECTIONS_PER_ADDRESS: '4',
        SIP_TCP_READ_TIMEOUT_MS: '400',
        SIP_TCP_IDLE_TIMEOUT_MS: '1000',
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
      },
    });
    sip = s.app.transports.get('sip') as SipTransport;
    await sip.ready;
  });
  after(() => s?.close());

  describe('with baresip', { skip: !hasBaresip() && NO_BARESIP }, () => {
    it('takes a call over TCP: the inbound agent answers on the connection, the greeting plays, the phone hangs up', { timeout: 30_000 }, async () => {
      const phone = await Baresip.start({ tcp: true });
      try {
        const agentId = await s.flowAgent(GREETING);
        assert.equal((await s.api('POST', '/import-phone-number', { phone_number: '+14155550100', inbound_agent_id: agentId })).status, 201);
        phone.command('dial', `sip:+14155550100@127.0.0.1:${sip.port};transport=tcp`);
        await phone.waitFor((e) => e.type === 'CALL_ESTABLISHED', 10_000);
        assert.equal(sip.connectionCount, 1, 'the call came over one TCP connection');
        await new Promise((r) => setTimeout(r, 1_500));
        phone.command('hangup');
        const ended = await eventually(async () => ((await s.api('POST', '/v2/list-calls', {})).json as any[]).find((c) => c.to_number === '+14155550100' && c.call_status === 'ended'));
        assert.equal(ended.disconnection_reason, 'user_hangup');
        assert.equal(ended.direction, 'inbound');
        assert.ok(ended.media.packets_out > 20, `packets_out ${ended.media.packets_out}: the greeting was sent`);
        assert.ok(ended.media.packets_in > 20, `packets_in ${ended.media.packets_in}: the phone's audio arrived`);
        assert.equal(sip.dialogCount, 0);
      } finally {
        await phone.close();
      }
    });

    it('places a call at a `;transport=tcp` trunk over TCP: baresip answers, hears the agent, and our BYE ends it', { timeout: 30_000 }, async () => {
      const phone = await Baresip.start({ user: '+14155550999', answer: 'auto', tcp: true });
      try {
        const agentId = await s.flowAgent(CALLING);
        const imported = await s.api('POST', '/import-phone-number', { phone_number: '+14155550300', termination_uri: `sip:127.0.0.1:${phone.sipPort};transport=tcp`, outbound_agent_id: agentId });
        assert.equal(imported.status, 201, JSON.stringify(imported.json));
        await eventually(() => sip.connectionCount === 0 || undefined, 5_000);
        const created = await s.api('POST', '/v2/create-phone-call', { from_number: '+14155550300', to_number: '+14155550999' });
        assert.equal(created.status, 201, JSON.stringify(created.json));
        const callId = created.json.call_id as string;
        const established = await phone.waitFor((e) => e.type === 'CALL_ESTABLISHED', 10_000);
        assert.match(String(established.peeruri), /\+14155550300/);
        assert.ok(sip.connectionCount >= 1, 'our INVITE went over a TCP connection of ours');
        await phone.waitFor((e) => e.type === 'CALL_CLOSED', 20_000);
        const ended = await eventually(async () => {
          const call = (await s.api('GET', `/v2/get-call/${callId}`)).json;
          return call.call_status === 'ended' ? call : undefined;
        }, 15_000);
        assert.equal(ended.disconnection_reason, 'agent_hangup');
        assert.ok(ended.media.packets_out > 20, `packets_out ${ended.media.packets_out}`);
        assert.equal(sip.dialogCount, 0);
      } finally {
        await phone.close();
      }
    });
  });

  it('frames by Content-Length: two messages in one segment and one in pieces are each answered on the connection; a ping gets its pong', { timeout: 10_000 }, async () => {
    const c = await connect(sip.port);
    try {
      c.socket.write(options('two-a', sip.port) + options('two-b', sip.port));
      const piece = options('pieces', sip.port);
      for (let at = 0; at < piece.length; at += 40) {
        c.socket.write(piece.slice(at, at + 40));
        await new Promise((r) => setTimeout(r, 10));
      }
      await eventually(() => (c.text().match(/SIP\/2\.0 200 OK/g) ?? []).length === 3 || undefined, 3_000);
      for (const id of ['two-a', 'two-b', 'pieces']) assert.match(c.text(), new RegExp(`Call-ID: ${id}\\r\\n`));
      c.socket.write('\r\n\r\n');
      await eventually(() => c.text().endsWith('\r\n\r\n\r\n') || c.text().endsWith('Content-Length: 0\r\n\r\n\r\n') || undefined, 3_000);
      assert.equal(c.isClosed(), false);
    } finally {
      c.socket.destroy();
    }
  });

  it('answers an INVITE on its connection with a Contact naming TCP; the BYE on the same connection ends the call', { timeout: 15_000 }, async () => {
    const agentId = await s.flowAgent(GREETING);
    assert.equal((await s.api('POST', '/import-phone-number', { phone_number: '+14155550155', inbound_agent_id: agentId })).status, 201);
    const sdp = 'v=0\r\no=t 1 1 IN IP4 127.0.0.1\r\ns=t\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40010 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n';
    const head = (method: string, cseq: number, toTag = '') =>
      `${method} sip:+14155550155@127.0.0.1:${sip.port};transport=tcp SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:5999;branch=z9hG4bK${method}${cseq}\r\nFrom: <sip:+14155550111@127.0.0.1>;tag=raw\r\nTo: <sip:+14155550155@127.0.0.1>${toTag}\r\nCall-ID: raw-tcp-1\r\nCSeq: ${cseq} ${method}\r\nContact: <sip:caller@127.0.0.1:5999;transport=tcp>\r\n`;
    const c = await connect(sip.port);
    try {
      c.socket.write(`${head('INVITE', 1)}Content-Type: application/sdp\r\nContent-Length: ${sdp.length}\r\n\r\n${sdp}`);
      const ok = await eventually(() => /SIP\/2\.0 200 OK[\s\S]*?\r\n\r\n/.exec(c.text())?.[0], 5_000);
      assert.match(ok, /Contact: <sip:127\.0\.0\.1:[0-9]+;transport=tcp>/);
      assert.match(ok, /Via: SIP\/2\.0\/TCP 127\.0\.0\.1:5999;branch=z9hG4bKINVITE1/);
      const toTag = /To: [^\r]*(;tag=[^;\r]+)/.exec(ok)?.[1] ?? '';
      c.socket.write(`${head('ACK', 1, toTag)}Content-Length: 0\r\n\r\n`);
      await new Promise((r) => setTimeout(r, 300));
      c.socket.write(`${head('BYE', 2, toTag)}Content-Length: 0\r\n\r\n`);
      await eventually(() => /CSeq: 2 BYE/.test(c.text()) || undefined, 3_000);
      const ended = await eventually(async () => ((await s.api('POST', '/v2/list-calls', {})).json as any[]).find((x) => x.telephony_identifier === 'raw-tcp-1' && x.call_status === 'ended'));
      assert.equal(ended.disconnection_reason, 'user_hangup');
      assert.equal(sip.dialogCount, 0);
    } finally {
      c.socket.destroy();
    }
  });

  it('closes a sender that trickles its headers past the read bound', { timeout: 10_000 }, async () => {
    const c = await connect(sip.port);
    const slow = options('slow', sip.port);
    let at = 0;
    const trickle = setInterval(() => {
      if (!c.isClosed() && at < slow.length) c.socket.write(slow[at++] as string);
    }, 50);
    try {
      assert.ok(await within(c.closed, 2_000), 'the slow connection was closed');
      assert.ok(at < slow.length, 'before the message was whole');
      assert.doesNotMatch(c.text(), /200 OK/);
    } finally {
      clearInterval(trickle);
      c.socket.destroy();
    }
  });

  it('refuses an oversized message with 413 and a message without Content-Length with 400, closing each connection; nothing is created', { timeout: 10_000 }, async () => {
    const before = (await s.api('POST', '/v2/list-calls', {})).json.length;
    const big = await connect(sip.port);
    big.socket.write(options('big', sip.port).replace('Content-Length: 0', 'Content-Type: application/sdp\r\nContent-Length: 100000') + 'v=0\r\n');
    assert.ok(await within(big.closed, 2_000));
    assert.match(big.text(), /^SIP\/2\.0 413 /);
    const endless = await connect(sip.port);
    endless.socket.write(options('endless', sip.port).replace('\r\n\r\n', `\r\nX-Padding: ${'x'.repeat(9_000)}`));
    assert.ok(await within(endless.closed, 2_000));
    assert.match(endless.text(), /^SIP\/2\.0 413 /);
    const unframed = await connect(sip.port);
    unframed.socket.write(options('unframed', sip.port).replace('Content-Length: 0\r\n', ''));
    assert.ok(await within(unframed.closed, 2_000));
    assert.match(unframed.text(), /^SIP\/2\.0 400 /);
    assert.equal((await s.api('POST', '/v2/list-calls', {})).json.length, before);
  });

  it('holds at most SIP_TCP_CONNECTIONS_PER_ADDRESS connections from one address; the rest are closed and the endpoint goes on answering', { timeout: 15_000 }, async () => {
    await eventually(() => sip.connectionCount === 0 || undefined, 5_000);
    const flood = await Promise.all(Array.from({ length: 60 }, () => connect(sip.port)));
    try {
      await new Promise((r) => setTimeout(r, 300));
      const open = flood.filter((c) => !c.isClosed());
      assert.equal(open.length, 4, `${open.length} of 60 connections left open`);
      assert.equal(sip.connectionCount, 4);
      const kept = open[0];
      assert.ok(kept);
      kept.socket.write(options('kept', sip.port));
      await eventually(() => /200 OK/.test(kept.text()) || undefined, 3_000);
    } finally {
      for (const c of flood) c.socket.destroy();
    }
    await eventually(() => sip.connectionCount === 0 || undefined, 3_000);
    const after = await connect(sip.port);
    after.socket.write(options('after', sip.port));
    await eventually(() => /200 OK/.test(after.text()) || undefined, 3_000);
    after.socket.destroy();
  });

  it('closes a connection that stays idle past SIP_TCP_IDLE_TIMEOUT_MS', { timeout: 10_000 }, async () => {
    const c = await connect(sip.port);
    c.socket.write(options('idle', sip.port));
    await eventually(() => /200 OK/.test(c.text()) || undefined, 3_000);
    assert.ok(await within(c.closed, 3_000), 'the idle connection was closed');
  });
});
