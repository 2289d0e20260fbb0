/**
 * SRTP keys as KeyObjects (src/lib/werift-srtp-keys.ts): the same bytes on the wire as werift's own
 * sessions, both profiles, at well under their CPU; and a real call over WebRTC (the Node client
 * and the server's endpoint, UDP on loopback) runs on such sessions on both sides, heard both ways.
 */
import assert from 'node:assert/strict';
import { KeyObject, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ProtectionProfileAes128CmHmacSha1_80, ProtectionProfileAeadAes128Gcm, RTCDtlsTransport, RtpHeader, type SrtcpSession, SrtpSession } from 'werift';
import { WebCallClient } from '../../src/client/web-call-client.ts';
import { useKeyObjects } from '../../src/lib/werift-srtp-keys.ts';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, fakeProviders, silence, startMediaServer, tone } from './helpers.ts';

const PROFILES = [
  { name: 'AES-CM/HMAC-SHA1-80', profile: ProtectionProfileAes128CmHmacSha1_80, salt: 14 },
  { name: 'AEAD AES-128-GCM', profile: ProtectionProfileAeadAes128Gcm, salt: 12 },
];

const sessionsOf = (profile: number, salt: number) => {
  const keys = { localMasterKey: randomBytes(16), localMasterSalt: randomBytes(salt), remoteMasterKey: randomBytes(16), remoteMasterSalt: randomBytes(salt) };
  const mirrored = { localMasterKey: keys.remoteMasterKey, localMasterSalt: keys.remoteMasterSalt, remoteMasterKey: keys.localMasterKey, remoteMasterSalt: keys.localMasterSalt };
  return { a: new SrtpSession({ keys, profile }), b: new SrtpSession({ keys: mirrored, profile }) };
};

const header = (i: number) => new RtpHeader({ payloadType: 111, sequenceNumber: i % 65_536, timestamp: i * 960, ssrc: 4321 });

/** Whether every key field of a session's ciphers is a KeyObject. */
const keyObjects = (session: SrtpSession | SrtcpSession): boolean =>
  [session.localContext, session.remoteContext].every((context) => {
    const cipher = (context as unknown as { cipher: Record<string, unknown> }).cipher;
    return ['srtpSessionKey', 'srtcpSessionKey'].every((field) => cipher[field] instanceof KeyObject);
  });

describe('SRTP keys as KeyObjects', () => {
  for (const { name, profile, salt } of PROFILES) {
    it(`${name}: packets are the same bytes as werift's own, and decrypt both ways`, () => {
      const plain = sessionsOf(profile, salt);
      const keyed = sessionsOf(profile, salt);
      // The same keys again, converted: what werift's Buffer-keyed session writes, the converted one writes too.
      const twin = new SrtpSession({ keys: (plain.a as unknown as { config: ConstructorParameters<typeof SrtpSession>[0] }).config.keys, profile });
      useKeyObjects(twin);
      useKeyObjects(keyed.a);
      assert.ok(keyObjects(twin) && keyObjects(keyed.a));
      const payload = randomBytes(90);
      for (let i = 0; i < 5; i++) {
        const wire = plain.a.encrypt(payload, header(i));
        assert.deepEqual(twin.encrypt(payload, header(i)), wire);
        assert.deepEqual(plain.b.decrypt(wire).subarray(12), payload);
        assert.deepEqual(keyed.b.decrypt(keyed.a.encrypt(payload, header(i))).subarray(12), payload);
      }
    });
  }

  it('costs at most 60 % of the CPU of werift\'s Buffer keys (AES-CM, in and out)', () => {
    const payload = randomBytes(60);
    const run = (convert: boolean): number => {
      const { a, b } = sessionsOf(ProtectionProfileAes128CmHmacSha1_80, 14);
      if (convert) for (const s of [a, b]) useKeyObjects(s);
      const start = process.cpuUsage();
      for (let i = 0; i < 1_000; i++) {
        const wire = a.encrypt(payload, header(i));
        a.encrypt(payload, header(i)); // as many out as in
        b.decrypt(wire);
      }
      const used = process.cpuUsage(start);
      return (used.user + used.system) / 1000;
    };
    run(false);
    let keyed = Infinity;
    let buffers = Infinity;
    for (let i = 0; i < 4; i++) {
      keyed = Math.min(keyed, run(true));
      buffers = Math.min(buffers, run(false));
    }
    assert.ok(keyed <= buffers * 0.6, `KeyObjects ${keyed.toFixed(1)} ms against Buffers ${buffers.toFixed(1)} ms`);
  });

  const kind = STORES[0]!; // the store plays no part here: one is enough
  describe('a real WebRTC call', { skip: kind.skip }, () => {
    let s: MediaServer;
    const transports: RTCDtlsTransport[] = [];
    const proto = RTCDtlsTransport.prototype as unknown as { startSrtp(this: RTCDtlsTransport): void };
    const start = proto.startSrtp;
    before(async () => {
      proto.startSrtp = function startSrtp(this: RTCDtlsTransport) {
        start.call(this);
        transports.push(this);
      };
      s = await startMediaServer(kind.name, { providers: fakeProviders(['hello'], { msPerChar: 30 }), env: { RTC_BIND_ADDRESS: '127.0.0.1', RTC_ICE_TCP: 'false' } });
    });
    after(async () => {
      proto.startSrtp = start;
      await s.close();
    });

    it('runs on KeyObject SRTP sessions on both sides, heard both ways', { timeout: 30_000 }, async () => {
      const agentId = await s.flowAgent({ start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hi.' } }] });
      const created = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
      const client = await WebCallClient.join({ url: s.baseUrl, accessToken: created.json.access_token, transport: 'webrtc', iceAddress: '127.0.0.1', timeoutMs: 15_000 });
      await client.waitFor('agent_stop_talking', 10_000);
      assert.ok(client.agentPcm().some((v) => Math.abs(v) > 1_000), 'the agent is heard');
      await client.play(tone(600));
      await client.play(silence(1_200));
      await client.waitFor((e) => e.type === 'update' && e.final && e.transcript.some((t) => t.role === 'user' && t.content === 'hello'), 10_000);
      await client.hangup();
      assert.equal(transports.length, 2, 'the server\'s DTLS transport and the client\'s');
      for (const t of transports) assert.ok(keyObjects(t.srtp) && keyObjects(t.srtcp), 'SRTP and SRTCP keys are KeyObjects');
    });
  });
});
