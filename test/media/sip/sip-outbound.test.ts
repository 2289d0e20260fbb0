// Issue 24: outbound calls over a SIP trunk. create-phone-call on a number with a termination_uri
// INVITEs the callee at the trunk: baresip (Debian) is the callee's phone (it answers and hears the
// agent; it rings and is cancelled; it refuses busy), and a small trunk written here speaks real SIP
// over UDP where the test must see the wire: a digest challenge (401 and 407, SHA-256 and MD5,
// checked against the RFC's computation done here), a lost INVITE retransmitted, the callee's BYE,
// and the keys a service LLM presses (press_digit) or a flow's press_digit node sends, decoded here
// from their RFC 4733 packets.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import dgram from 'node:dgram';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { parseSipMessage, type SipRequest } from '../../../src/media/sip/sip-message.ts';
import type { SipTransport } from '../../../src/media/sip/sip.transport.ts';
import { PHONE_PLAYOUT_MS } from '../../../src/media/sip/sip.endpoint.ts';
import { DEFAULT_OUTPUT_LEAD_MS } from '../../../src/voice/index.ts';
import { FakeLlm } from '../../../src/providers/fake/fake.providers.ts';
import { type MediaServer, eventually, fakeProviders, startMediaServer } from '../helpers.ts';
import { Baresip, NO_BARESIP, hasBaresip } from './baresip.ts';

const CALLING = { start_node_id: 'hi', nodes: [{ id: 'hi', type: 'end', instruction: { type: 'static_text', text: 'Hello, this is the clinic calling about your appointment tomorrow. Goodbye.' } }] };
const TALKING = { start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello, this is the clinic.' } }] };

/** A trunk written here: a UDP socket that sees every message and answers as the test says. */
class TestTrunk {
  readonly socket = dgram.createSocket('udp4');
  readonly requests: SipRequest[] = [];
  readonly rtp = dgram.createSocket('udp4');
  rtpPackets: Buffer[] = [];
  /** When each of rtpPackets arrived, ms (Date.now()). */
  rtpAt: number[] = [];
  onRequest: (request: SipRequest, from: dgram.RemoteInfo) => void = () => {};

  async start(): Promise<void> {
    this.socket.on('message', (data, from) => {
      const message = parseSipMessage(data);
      if (message.kind !== 'request') return;
      this.requests.push(message);
      this.onRequest(message, from);
    });
    this.rtp.on('message', (data) => {
      this.rtpPackets.push(data);
      this.rtpAt.push(Date.now());
    });
    await Promise.all([new Promise<void>((r) => this.socket.bind(0, '127.0.0.1', r)), new Promise<void>((r) => this.rtp.bind(0, '127.0.0.1', r))]);
  }
  get port(): number {
    return this.socket.address().port;
  }
  /** A response to `request`, with `toTag` on its To. */
  respond(request: SipRequest, to: dgram.RemoteInfo, status: number, reason: string, extra: string[] = [], body = ''): void {
    const h = (name: string) => request.headers.one(name) ?? '';
    const lines = [
      `SIP/2.0 ${status} ${reason}`,
      ...request.headers.all('via').map((v) => `Via: ${v}`),
      `From: ${h('from')}`,
      `To: ${h('to')}${status > 100 && !h('to').includes('tag=') ? ';tag=trunk1' : ''}`,
      `Call-ID: ${h('call-id')}`,
      `CSeq: ${h('cseq')}`,
      ...extra,
      `Content-Length: ${Buffer.byteLength(body)}`,
      '',
      body,
    ];
    this.socket.send(Buffer.from(lines.join('\r\n')), to.port, to.address);
  }
  answerSdp(): string {
    return ['v=0', 'o=trunk 1 1 IN IP4 127.0.0.1', 's=trunk', 'c=IN IP4 127.0.0.1', 't=0 0', `m=audio ${this.rtp.address().port} RTP/AVP 0 101`, 'a=rtpmap:0 PCMU/8000', 'a=rtpmap:101 telephone-event/8000', ''].join('\r\n');
  }
  close(): void {
    this.socket.close();
    this.rtp.close();
  }
}

/** The digest parameters of an Authorization value. */
function digestParams(value: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of value.replace(/^Digest\s+/i, '').matchAll(/([a-z]+)=(?:"([^"]*)"|([^\s,]+))/gi)) out[(m[1] as string).toLowerCase()] = (m[2] ?? m[3]) as string;
  return out;
}

describe('outbound calls over a SIP trunk', { skip: !hasBaresip() && NO_BARESIP }, () => {
  let s: MediaServer;
  let sip: SipTransport;
  const llm = new FakeLlm();
  before(async () => {
    s = await startMediaServer('sqlite', { providers: fakeProviders([], { llm, msPerChar: 15 }), env: { SIP_PORT: '0', SIP_RTP_PORT_MIN: '45000', SIP_RTP_PORT_MAX: '45998', SIP_RING_TIMEOUT_MS: '2000', WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' } });
    sip = s.app.transports.get('sip') as SipTransport;
    await sip.ready;
  });
  after(() => s?.close());

  const importNumber = async (phone: string, termination: string, agentId: string, auth?: { user: string; password: string }) => {
    const imported = await s.api('POST', '/import-phone-number', {
      phone_number: phone,
      termination_uri: termination,
      outbound_agent_id: agentId,
      ...(auth ? { sip_trunk_auth_username: auth.user, sip_trunk_auth_password: auth.password } : {}),
    });
    assert.equal(imported.status, 201, JSON.stringify(imported.json));
  };
  const endedCall = (callId: string, timeoutMs = 15_000) =>
    eventually(async () => {
      const call = (await s.api('GET', `/v2/get-call/${callId}`)).json;
      return call.call_status === 'ended' ? call : undefined;
    }, timeoutMs);

  it('baresip answers: the call goes ongoing, the agent speaks to it, and the agent hangs up with a BYE', { timeout: 30_000 }, async () => {
    // baresip answers calls to its own user only: the number dialled.
    const phone = await Baresip.start({ user: '+14155550999', answer: 'auto' });
    try {
      const agentId = await s.flowAgent(CALLING);
      await importNumber('+14155550300', `127.0.0.1:${phone.sipPort}`, agentId);
      const created = await s.api('POST', '/v2/create-phone-call', { from_number: '+14155550300', to_number: '+14155550999' });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      assert.equal(created.json.call_status, 'registered');
      assert.equal(created.json.direction, 'outbound');
      const callId = created.json.call_id as string;
      const established = await phone.waitFor((e) => e.type === 'CALL_ESTABLISHED', 10_000);
      assert.match(String(established.peeruri), /\+14155550300/);
      await eventually(async () => (await s.api('GET', `/v2/get-call/${callId}`)).json.call_status === 'ongoing', 10_000);
      // The agent says its line and hangs up: our BYE closes the phone's call.
      await phone.waitFor((e) => e.type === 'CALL_CLOSED', 20_000);
      const ended = await endedCall(callId);
      assert.equal(ended.disconnection_reason, 'agent_hangup');
      assert.equal(ended.to_number, '+14155550999');
      assert.ok(ended.telephony_identifier.length > 0);
      assert.equal(ended.media.transport, 'sip');
      const heard = phone.recordings().find((file) => file.endsWith('-dec.wav'));
      assert.ok(heard, 'baresip recorded what it heard');
      const pcm = new Int16Array(fs.readFileSync(heard).buffer.slice(44));
      const loud = pcm.filter((v) => Math.abs(v) > 1000).length;
      assert.ok(loud > 4000, `${loud} loud samples: the agent's words reached the phone`);
      assert.equal(sip.dialogCount, 0);
    } finally {
      await phone.close();
    }
  });

  it('a callee that refuses busy ends dial_busy; one that rings past the bound is cancelled and ends dial_no_answer', { timeout: 30_000 }, async () => {
    const phone = await Baresip.start({ user: '+14155550998', answer: 'manual' });
    try {
      const agentId = await s.flowAgent(TALKING);
      await importNumber('+14155550301', `127.0.0.1:${phone.sipPort}`, agentId);
      const busy = await s.api('POST', '/v2/create-phone-call', { from_number: '+14155550301', to_number: '+14155550998' });
      assert.equal(busy.status, 201, JSON.stringify(busy.json));
      await phone.waitFor((e) => e.type === 'CALL_INCOMING', 10_000);
      phone.command('hangup');
      assert.equal((await endedCall(busy.json.call_id)).disconnection_reason, 'dial_busy');

      const incomings = () => phone.events.filter((e) => e.type === 'CALL_INCOMING').length;
      const closed = () => phone.events.filter((e) => e.type === 'CALL_CLOSED').length;
      const closedBefore = closed();
      const unanswered = await s.api('POST', '/v2/create-phone-call', { from_number: '+14155550301', to_number: '+14155550998' });
      await phone.waitFor(() => incomings() === 2, 10_000);
      // The ring bound is 2 s here: our CANCEL closes the ringing call on the phone.
      await phone.waitFor(() => closed() > closedBefore, 10_000);
      assert.equal((await endedCall(unanswered.json.call_id)).disconnection_reason, 'dial_no_answer');
    } finally {
      await phone.close();
    }
  });

  for (const [status, algorithm] of [
    [401, 'SHA-256'],
    [407, 'MD5'],
  ] as const) {
    it(`a trunk that challenges (${status}, ${algorithm}, qop=auth) gets the INVITE again with the number's credentials; answered, the callee's BYE ends the call`, { timeout: 20_000 }, async () => {
      const trunk = new TestTrunk();
      await trunk.start();
      try {
        const agentId = await s.flowAgent(TALKING);
        const phoneNumber = status === 401 ? '+14155550302' : '+14155550303';
        await importNumber(phoneNumber, `sip:127.0.0.1:${trunk.port}`, agentId, { user: 'trunkuser', password: 's3cret pass' });
        const header = status === 401 ? 'WWW-Authenticate' : 'Proxy-Authenticate';
        const credentialsHeader = status === 401 ? 'authorization' : 'proxy-authorization';
        let verified = false;
        let dialog: { request: SipRequest; from: dgram.RemoteInfo } | null = null;
        trunk.onRequest = (request, from) => {
          if (request.method === 'ACK') return;
          if (request.method === 'BYE') return trunk.respond(request, from, 200, 'OK');
          if (request.method !== 'INVITE') return;
          const given = request.headers.one(credentialsHeader);
          if (!given) return trunk.respond(request, from, status, 'Unauthorized', [`${header}: Digest realm="trunk.test", nonce="n0nce42", algorithm=${algorithm}, qop="auth", opaque="op1"`]);
          // The RFC's computation (RFC 7616 3.4.1), done here independently.
          const p = digestParams(given);
          const hash = (v: string) => createHash(algorithm === 'SHA-256' ? 'sha256' : 'md5').update(v).digest('hex');
          const ha1 = hash(`trunkuser:trunk.test:s3cret pass`);
          const ha2 = hash(`INVITE:${p.uri}`);
          assert.equal(p.uri, request.uri);
          assert.equal(p.opaque, 'op1');
          assert.equal(p.response, hash(`${ha1}:n0nce42:${p.nc}:${p.cnonce}:auth:${ha2}`));
          assert.equal(request.headers.one('cseq'), '2 INVITE');
          verified = true;
          dialog = { request, from };
          trunk.respond(request, from, 200, 'OK', [`Contact: <sip:callee@127.0.0.1:${trunk.port}>`, 'Content-Type: application/sdp'], trunk.answerSdp());
        };
        const created = await s.api('POST', '/v2/create-phone-call', { from_number: phoneNumber, to_number: '+14155550996' });
        assert.equal(created.status, 201, JSON.stringify(created.json));
        const callId = created.json.call_id as string;
        await eventually(async () => (await s.api('GET', `/v2/get-call/${callId}`)).json.call_status === 'ongoing', 10_000);
        assert.ok(verified);
        assert.equal(trunk.requests.filter((r) => r.method === 'INVITE').length, 2);
        assert.ok(trunk.requests.some((r) => r.method === 'ACK' && r.headers.one('cseq') === '1 ACK'), 'the challenge was ACKed');
        await eventually(() => trunk.requests.some((r) => r.method === 'ACK' && r.headers.one('cseq') === '2 ACK'));
        // The agent's greeting arrives as RTP at the address the answer gave.
        await eventually(() => trunk.rtpPackets.length > 10, 10_000);
        // The callee hangs up.
        const answered = dialog as unknown as { request: SipRequest; from: dgram.RemoteInfo };
        const from = answered.request.headers.one('from') ?? '';
        const bye = [
          `BYE sip:x@127.0.0.1:${sip.port} SIP/2.0`,
          `Via: SIP/2.0/UDP 127.0.0.1:${trunk.port};branch=z9hG4bKbye1`,
          'Max-Forwards: 70',
          `From: ${answered.request.headers.one('to')};tag=trunk1`,
          `To: ${from}`,
          `Call-ID: ${answered.request.headers.one('call-id')}`,
          'CSeq: 1 BYE',
          'Content-Length: 0',
          '',
          '',
        ].join('\r\n');
        trunk.socket.send(Buffer.from(bye), answered.from.port, answered.from.address);
        const ended = await endedCall(callId);
        assert.equal(ended.disconnection_reason, 'user_hangup');
        assert.equal(ended.telephony_identifier, answered.request.headers.one('call-id'));
        assert.equal(sip.dialogCount, 0);
      } finally {
        trunk.close();
      }
    });
  }

  it('a trunk that challenges again after our credentials is not retried: the call ends dial_failed; a lost INVITE is sent again (timer A)', { timeout: 20_000 }, async () => {
    const trunk = new TestTrunk();
    await trunk.start();
    try {
      const agentId = await s.flowAgent(TALKING);
      await importNumber('+14155550304', `127.0.0.1:${trunk.port}`, agentId, { user: 'trunkuser', password: 'wrong' });
      let seen = 0;
      trunk.onRequest = (request, from) => {
        if (request.method !== 'INVITE') return;
        // The first INVITE is "lost": only its retransmission is answered.
        if (++seen === 1) return;
        trunk.respond(request, from, 401, 'Unauthorized', ['WWW-Authenticate: Digest realm="trunk.test", nonce="n2", qop="auth"']);
      };
      const created = await s.api('POST', '/v2/create-phone-call', { from_number: '+14155550304', to_number: '+14155550995' });
      const ended = await endedCall(created.json.call_id);
      assert.equal(ended.disconnection_reason, 'dial_failed');
      const invites = trunk.requests.filter((r) => r.method === 'INVITE');
      assert.deepEqual(invites.map((r) => r.headers.one('cseq')), ['1 INVITE', '1 INVITE', '2 INVITE']);
      assert.equal(invites[0]?.headers.one('via'), invites[1]?.headers.one('via'), 'a retransmission, not a new transaction');
      assert.ok(invites[2]?.headers.one('authorization'));
    } finally {
      trunk.close();
    }
  });

  it('press_digit: the service LLM presses keys on the call; the trunk receives them as RFC 4733 telephone events', { timeout: 20_000 }, async () => {
    const trunk = new TestTrunk();
    await trunk.start();
    try {
      const created = await s.api('POST', '/create-retell-llm', { general_prompt: 'You navigate phone menus.', general_tools: [{ type: 'press_digit', name: 'press_keys' }] });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      const agent = await s.api('POST', '/create-agent', { response_engine: { type: 'retell-llm', llm_id: created.json.llm_id } });
      await importNumber('+14155550306', `127.0.0.1:${trunk.port}`, agent.json.agent_id);
      // The agent opens the call by pressing 1, then #.
      llm.push({ toolCalls: [{ name: 'press_keys', arguments: { digit: '1#' } }] });
      let answered: { request: SipRequest; from: dgram.RemoteInfo } | null = null;
      trunk.onRequest = (request, from) => {
        if (request.method === 'BYE') return trunk.respond(request, from, 200, 'OK');
        if (request.method !== 'INVITE') return;
        answered = { request, from };
        trunk.respond(request, from, 200, 'OK', [`Contact: <sip:callee@127.0.0.1:${trunk.port}>`, 'Content-Type: application/sdp'], trunk.answerSdp());
      };
      const call = await s.api('POST', '/v2/create-phone-call', { from_number: '+14155550306', to_number: '+14155550993' });
      assert.equal(call.status, 201, JSON.stringify(call.json));
      // RFC 4733: payload type 101 (our offer's), one event per timestamp, its end (E bit) sent three times.
      const events = () => trunk.rtpPackets.filter((p) => ((p[1] as number) & 0x7f) === 101);
      await eventually(() => events().filter((p) => ((p[13] as number) & 0x80) !== 0).length >= 6, 10_000);
      const byTimestamp = new Map<number, Buffer[]>();
      for (const p of events()) byTimestamp.set(p.readUInt32BE(4), [...(byTimestamp.get(p.readUInt32BE(4)) ?? []), p]);
      const keys = [...byTimestamp.values()].map((packets) => '0123456789*#'[packets[0]?.[12] as number]).join('');
      assert.equal(keys, '1#');
      for (const packets of byTimestamp.values()) {
        assert.ok(((packets[0]?.[1] as number) & 0x80) !== 0, 'the first packet of an event has the marker bit');
        const ends = packets.filter((p) => ((p[13] as number) & 0x80) !== 0);
        assert.equal(ends.length, 3);
        assert.equal(ends[0]?.readUInt16BE(14), 800, 'the event lasted 100 ms (800 samples)');
      }
      const callId = call.json.call_id as string;
      // The press is recorded once the keys are out; the callee hangs up a moment after.
      await new Promise((r) => setTimeout(r, 300));
      const live = (await s.api('GET', `/v2/get-call/${callId}`)).json;
      assert.equal(live.call_status, 'ongoing');
      const to = answered as unknown as { request: SipRequest; from: dgram.RemoteInfo };
      const bye = [
        `BYE sip:x@127.0.0.1:${sip.port} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${trunk.port};branch=z9hG4bKbye2`,
        `From: ${to.request.headers.one('to')};tag=trunk1`,
        `To: ${to.request.headers.one('from')}`,
        `Call-ID: ${to.request.headers.one('call-id')}`,
        'CSeq: 1 BYE',
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n');
      trunk.socket.send(Buffer.from(bye), to.from.port, to.from.address);
      const ended = await endedCall(callId);
      const tools = (ended.transcript_with_tool_calls as Array<{ role: string; name?: string; content?: string }>).filter((u) => u.role.startsWith('tool_call'));
      assert.deepEqual(tools.map((u) => u.role), ['tool_call_invocation', 'tool_call_result'], JSON.stringify(ended.transcript_with_tool_calls));
      assert.equal(tools[1]?.content, 'pressed 1#');
    } finally {
      trunk.close();
    }
  });

  it("a flow's press_digit node sends its keys as RFC 4733 events, a pause at the comma, then moves on", { timeout: 20_000 }, async () => {
    const trunk = new TestTrunk();
    await trunk.start();
    try {
      const agentId = await s.flowAgent({
        start_node_id: 'menu',
        nodes: [
          { id: 'menu', type: 'press_digit', digits: '1,#', edges: [{ id: 'on', destination_node_id: 'done', transition_condition: { type: 'always' } }] },
          { id: 'done', type: 'end', instruction: { type: 'static_text', text: 'Thanks. Goodbye.' } },
        ],
      });
      await importNumber('+14155550307', `127.0.0.1:${trunk.port}`, agentId);
      trunk.onRequest = (request, from) => {
        if (request.method === 'BYE') return trunk.respond(request, from, 200, 'OK');
        if (request.method === 'INVITE') trunk.respond(request, from, 200, 'OK', [`Contact: <sip:callee@127.0.0.1:${trunk.port}>`, 'Content-Type: application/sdp'], trunk.answerSdp());
      };
      const call = await s.api('POST', '/v2/create-phone-call', { from_number: '+14155550307', to_number: '+14155550992' });
      assert.equal(call.status, 201, JSON.stringify(call.json));
      const ended = await endedCall(call.json.call_id as string);
      assert.equal(ended.disconnection_reason, 'agent_hangup', 'the flow moved on to its end node after the keys');
      const byTimestamp = new Map<number, Buffer[]>();
      for (const p of trunk.rtpPackets.filter((p) => ((p[1] as number) & 0x7f) === 101)) byTimestamp.set(p.readUInt32BE(4), [...(byTimestamp.get(p.readUInt32BE(4)) ?? []), p]);
      assert.equal([...byTimestamp.values()].map((packets) => '0123456789*#'[packets[0]?.[12] as number]).join(''), '1#');
      // The comma's pause: the second key's first packet arrives 500 ms or more after the first key's last.
      const [first, second] = [...byTimestamp.values()];
      const gap = (trunk.rtpAt[trunk.rtpPackets.indexOf(second?.[0] as Buffer)] ?? 0) - (trunk.rtpAt[trunk.rtpPackets.indexOf(first?.at(-1) as Buffer)] ?? 0);
      assert.ok(gap >= 450, `the comma paused ${gap} ms`);
      const tools = (ended.transcript_with_tool_calls as Array<{ role: string; name?: string; content?: string }>).filter((u) => u.role.startsWith('tool_call'));
      assert.deepEqual(tools.map((u) => u.name ?? u.content), ['press_digit', 'pressed 1,#']);
    } finally {
      trunk.close();
    }
  });

  it("the agent ends the call: the BYE follows its last words' RTP by what was sent ahead of real time and the phone's playout, so the phone plays them", { timeout: 20_000 }, async () => {
    const trunk = new TestTrunk();
    await trunk.start();
    try {
      const agentId = await s.flowAgent({ start_node_id: 'bye', nodes: [{ id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Thank you for calling. Goodbye.' } }] });
      await importNumber('+14155550308', `127.0.0.1:${trunk.port}`, agentId);
      let byeAt = 0;
      trunk.onRequest = (request, from) => {
        if (request.method === 'BYE') {
          byeAt = Date.now();
          return trunk.respond(request, from, 200, 'OK');
        }
        if (request.method === 'INVITE') trunk.respond(request, from, 200, 'OK', [`Contact: <sip:callee@127.0.0.1:${trunk.port}>`, 'Content-Type: application/sdp'], trunk.answerSdp());
      };
      const call = await s.api('POST', '/v2/create-phone-call', { from_number: '+14155550308', to_number: '+14155550993' });
      assert.equal(call.status, 201, JSON.stringify(call.json));
      const ended = await endedCall(call.json.call_id as string);
      assert.equal(ended.disconnection_reason, 'agent_hangup');
      await eventually(() => byeAt > 0, 5_000);
      const lastAudioAt = trunk.rtpAt.findLast((_, i) => ((trunk.rtpPackets[i]?.[1] as number) & 0x7f) === 0) ?? 0;
      assert.ok(trunk.rtpPackets.length > 10, 'the goodbye was sent');
      // The session sends its audio up to 80 ms (its output lead) ahead of real time, and the phone plays what it buffered.
      const minimum = DEFAULT_OUTPUT_LEAD_MS + PHONE_PLAYOUT_MS - 10;
      assert.ok(byeAt - lastAudioAt >= minimum, `the BYE came ${byeAt - lastAudioAt} ms after the last audio packet, not ${minimum}`);
    } finally {
      trunk.close();
    }
  });

  it('a number with no termination_uri cannot place calls: 400 naming from_number', async () => {
    const agentId = await s.flowAgent(TALKING);
    assert.equal((await s.api('POST', '/import-phone-number', { phone_number: '+14155550305', outbound_agent_id: agentId })).status, 201);
    const before = (await s.api('POST', '/v2/list-calls', {})).json.length;
    const refused = await s.api('POST', '/v2/create-phone-call', { from_number: '+14155550305', to_number: '+14155550994' });
    assert.equal(refused.status, 400);
    assert.match(JSON.stringify(refused.json), /from_number/);
    assert.equal((await s.api('POST', '/v2/list-calls', {})).json.length, before);
  });

  for (const follows of [false, true]) {
    it(follows ? 'early media: an answer whose SDP names other media than the 183\'s is followed; the agent speaks to the answer\'s address' : 'early media: a 183 with SDP opens the call\'s RTP before the answer, the call stays registered and the agent sends nothing; the answer with the same SDP goes on with it', { timeout: 20_000 }, async () => {
      const trunk = new TestTrunk();
      await trunk.start();
      // The 183's media: the trunk's own RTP socket, or (when the answer will move it) another one.
      const early = dgram.createSocket('udp4');
      const earlyPackets: Buffer[] = [];
      early.on('message', (data) => earlyPackets.push(data));
      await new Promise<void>((r) => early.bind(0, '127.0.0.1', r));
      try {
        const agentId = await s.flowAgent(CALLING);
        const phoneNumber = follows ? '+14155550311' : '+14155550310';
        await importNumber(phoneNumber, `127.0.0.1:${trunk.port}`, agentId);
        const earlySdp = follows ? trunk.answerSdp().replace(/^m=audio [0-9]+/m, `m=audio ${early.address().port}`) : trunk.answerSdp();
        const earlySender = follows ? early : trunk.rtp;
        let invite: { request: SipRequest; from: dgram.RemoteInfo } | undefined;
        trunk.onRequest = (request, from) => {
          if (request.method === 'ACK') return;
          if (request.method === 'BYE') return trunk.respond(request, from, 200, 'OK');
          if (request.method !== 'INVITE') return;
          invite = { request, from };
          trunk.respond(request, from, 183, 'Session Progress', ['Content-Type: application/sdp'], earlySdp);
        };
        const created = await s.api('POST', '/v2/create-phone-call', { from_number: phoneNumber, to_number: '+14155550993' });
        assert.equal(created.status, 201, JSON.stringify(created.json));
        const callId = created.json.call_id as string;
        const offered = await eventually(() => invite);
        const ourRtpPort = Number(/^m=audio ([0-9]+)/m.exec(offered.request.body)?.[1]);
        // Ringback from the 183's address, 30 packets of 20 ms, before any answer.
        for (let i = 0; i < 30; i++) {
          const packet = Buffer.alloc(172, 0xff);
          packet[0] = 0x80;
          packet[1] = 0;
          packet.writeUInt16BE(i, 2);
          packet.writeUInt32BE(i * 160, 4);
          packet.writeUInt32BE(77, 8);
          earlySender.send(packet, ourRtpPort, '127.0.0.1');
          await new Promise((r) => setTimeout(r, 20));
        }
        assert.equal((await s.api('GET', `/v2/get-call/${callId}`)).json.call_status, 'registered', 'not ongoing before the answer');
        assert.equal(trunk.rtpPackets.length + earlyPackets.length, 0, 'nothing sent during early media');
        trunk.respond(offered.request, offered.from, 200, 'OK', [`Contact: <sip:callee@127.0.0.1:${trunk.port}>`, 'Content-Type: application/sdp'], trunk.answerSdp());
        const ended = await endedCall(callId);
        assert.equal(ended.disconnection_reason, 'agent_hangup');
        assert.ok(trunk.rtpPackets.length > 20, `${trunk.rtpPackets.length} packets of the agent at the answer's address`);
        assert.equal(earlyPackets.length, 0, 'nothing sent to the early media\'s address');
        if (!follows) assert.ok(ended.media.packets_in >= 25, `${ended.media.packets_in} packets read: the early media's, on the same RTP session`);
        else assert.equal(ended.media.packets_in, 0, 'the answer\'s media is a new session');
      } finally {
        early.close();
        trunk.close();
      }
    });
  }
});
