// Issue 24: opt-in digest authentication of inbound INVITEs (SIP_INBOUND_AUTH_*), from a raw UDP
// SIP client: a first INVITE is challenged (401, SHA-256 and MD5), the INVITE retried with the right
// answer is taken (either algorithm), a wrong one is refused (403) and creates nothing, a replayed
// answer is challenged again. The verifier's nonces expire and their table is bounded.
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { after, before, describe, it } from 'node:test';
import { digestAuthorization, parseDigestChallenge } from '../../../src/media/sip/digest.ts';
import { DigestVerifier, MAX_NONCES, NONCE_TTL_MS } from '../../../src/media/sip/digest-server.ts';
import type { SipTransport } from '../../../src/media/sip/sip.transport.ts';
import { type MediaServer, eventually, fakeProviders, startMediaServer } from '../helpers.ts';

const GREETING = { start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello.' } }] };
const NUMBER = '+14155550100';
const CREDENTIALS = { username: 'carrier', password: 'correct horse battery' };

function invite(o: { sipPort: number; fromPort: number; callId: string; cseq: number; authorization?: string }): Buffer {
  const sdp = ['v=0', 'o=test 1 1 IN IP4 127.0.0.1', 's=test', 'c=IN IP4 127.0.0.1', 't=0 0', 'm=audio 41000 RTP/AVP 0', 'a=rtpmap:0 PCMU/8000', ''].join('\r\n');
  return Buffer.from(
    [
      `INVITE sip:${NUMBER}@127.0.0.1:${o.sipPort} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${o.fromPort};branch=z9hG4bK${o.callId}${o.cseq}`,
      'Max-Forwards: 70',
      `From: <sip:+14155550111@127.0.0.1:${o.fromPort}>;tag=a1`,
      `To: <sip:${NUMBER}@127.0.0.1>`,
      `Call-ID: ${o.callId}`,
      `CSeq: ${o.cseq} INVITE`,
      `Contact: <sip:caller@127.0.0.1:${o.fromPort}>`,
      ...(o.authorization ? [`Authorization: ${o.authorization}`] : []),
      'Content-Type: application/sdp',
      `Content-Length: ${Buffer.byteLength(sdp)}`,
      '',
      sdp,
    ].join('\r\n'),
  );
}

describe('digest authentication of inbound INVITEs', () => {
  let s: MediaServer;
  let sip: SipTransport;
  let socket: dgram.Socket;
  const received: string[] = [];
  before(async () => {
    s = await startMediaServer('sqlite', {
      providers: fakeProviders([], { msPerChar: 20 }),
      env: { SIP_PORT: '0', SIP_RTP_PORT_MIN: '44000', SIP_RTP_PORT_MAX: '44998', SIP_INBOUND_AUTH_USERNAME: CREDENTIALS.username, SIP_INBOUND_AUTH_PASSWORD: CREDENTIALS.password },
    });
    sip = s.app.transports.get('sip') as SipTransport;
    await sip.ready;
    const agentId = await s.flowAgent(GREETING);
    assert.equal((await s.api('POST', '/import-phone-number', { phone_number: NUMBER, inbound_agent_id: agentId })).status, 201);
    socket = dgram.createSocket('udp4');
    socket.on('message', (data) => received.push(data.toString('latin1')));
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  });
  after(async () => {
    socket.close();
    await s.close();
  });

  const send = (message: Buffer) => socket.send(message, sip.port, '127.0.0.1');
  /** The next final response (not 100 Trying) to `callId`. */
  const final = (callId: string) => eventually(() => received.find((m) => m.includes(`Call-ID: ${callId}\r\n`) && /^SIP\/2\.0 [2-6][0-9]{2}/.test(m)), 5_000);
  const take = async (callId: string) => {
    const m = await final(callId);
    received.splice(received.indexOf(m), 1);
    return m;
  };
  const status = (m: string) => Number(m.slice(8, 11));
  const challenges = (m: string) => [...m.matchAll(/^WWW-Authenticate: (.*)$/gim)].map((x) => x[1]!.trim());
  const calls = async () => (await s.api('POST', '/v2/list-calls', {})).json.length as number;

  it('challenges, takes the right answer (SHA-256 or MD5), refuses a wrong one with 403 and a replay with a new challenge', { timeout: 20_000 }, async () => {
    const port = socket.address().port;
    const uri = `sip:${NUMBER}@127.0.0.1:${sip.port}`;
    for (const algorithm of ['SHA-256', 'MD5'] as const) {
      const callId = `digest-${algorithm}`;
      send(invite({ sipPort: sip.port, fromPort: port, callId, cseq: 1 }));
      const challenged = await take(callId);
      assert.equal(status(challenged), 401);
      const offered = challenges(challenged).map((h) => parseDigestChallenge(h));
      assert.deepEqual(offered.map((c) => [c?.algorithm, c?.qopAuth]), [['SHA-256', true], ['MD5', true]]);
      const challenge = offered.find((c) => c?.algorithm === algorithm)!;
      const authorization = digestAuthorization(challenge, CREDENTIALS, { method: 'INVITE', uri });
      send(invite({ sipPort: sip.port, fromPort: port, callId, cseq: 2, authorization }));
      assert.equal(status(await take(callId)), 200, `${algorithm}: answered`);
      // The same answer again, on a new call: its nonce was used; a new challenge.
      send(invite({ sipPort: sip.port, fromPort: port, callId: `${callId}-replay`, cseq: 1, authorization }));
      assert.equal(status(await take(`${callId}-replay`)), 401);
    }
    const before = await calls();
    const callId = 'digest-wrong';
    send(invite({ sipPort: sip.port, fromPort: port, callId, cseq: 1 }));
    const challenge = parseDigestChallenge(challenges(await take(callId))[0]!)!;
    send(invite({ sipPort: sip.port, fromPort: port, callId, cseq: 2, authorization: digestAuthorization(challenge, { ...CREDENTIALS, password: 'wrong horse' }, { method: 'INVITE', uri }) }));
    assert.equal(status(await take(callId)), 403);
    assert.equal(await calls(), before, 'a refused INVITE creates no call');
  });

  it('names half-set or bad inbound credentials at start-up', async () => {
    const { loadConfig } = await import('../../../src/config/config.ts');
    assert.throws(() => loadConfig({ SIP_PORT: '0', SIP_INBOUND_AUTH_USERNAME: 'carrier' }), /SIP_INBOUND_AUTH_USERNAME and SIP_INBOUND_AUTH_PASSWORD must be set together/);
    assert.throws(() => loadConfig({ SIP_PORT: '0', SIP_INBOUND_AUTH_USERNAME: 'carrier', SIP_INBOUND_AUTH_PASSWORD: 'short' }), /SIP_INBOUND_AUTH_PASSWORD must be 8 to 256 characters/);
  });

  it('nonces expire (a stale answer is challenged with stale=true) and their table is bounded', () => {
    let now = 0;
    const verifier = new DigestVerifier({ credentials: CREDENTIALS, realm: 'sb.example.com', now: () => now });
    const challenge = parseDigestChallenge(verifier.challenge()[1]!)!;
    const answer = digestAuthorization(challenge, CREDENTIALS, { method: 'INVITE', uri: 'sip:x@sb.example.com' });
    now = NONCE_TTL_MS + 1;
    assert.deepEqual(verifier.verify(answer, 'INVITE'), { kind: 'challenge', stale: true });
    assert.match(verifier.challenge(true)[0]!, /stale=true/);
    for (let i = 0; i < MAX_NONCES + 50; i++) verifier.challenge();
    assert.equal(verifier.outstanding, MAX_NONCES);
    const fresh = parseDigestChallenge(verifier.challenge()[0]!)!;
    assert.deepEqual(verifier.verify(digestAuthorization({ ...fresh, realm: 'other' }, CREDENTIALS, { method: 'INVITE', uri: 'sip:x@y' }), 'INVITE'), { kind: 'wrong' });
    assert.deepEqual(verifier.verify(digestAuthorization(fresh, CREDENTIALS, { method: 'INVITE', uri: 'sip:x@y' }), 'INVITE'), { kind: 'ok' });
  });
});
