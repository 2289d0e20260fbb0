/**
 * SRTP's session keys as KeyObjects in werift 0.25. werift makes a cipher (and, for AES-CM, an
 * HMAC) per packet from its session keys held as Buffers, and Node turns a Buffer key into a key
 * object on every such call, through a failed brand check that throws and catches: two thirds of
 * the CPU SRTP costs a call (BENCHMARKS.md, "WebRTC latency under load"). Made KeyObjects once when
 * the DTLS transport derives the keys, the same ciphers run at about a third of the cost, with the
 * same bytes on the wire.
 */
import { createSecretKey } from 'node:crypto';
import { RTCDtlsTransport, type SrtcpSession, type SrtpSession } from 'werift';

/** The fields of werift's SRTP ciphers (CipherAesCtr, CipherAesGcm) that hold session keys. */
const KEY_FIELDS = ['srtpSessionKey', 'srtcpSessionKey', 'srtpSessionAuthTag', 'srtcpSessionAuthTag'] as const;

type Keyed = Partial<Record<(typeof KEY_FIELDS)[number], unknown>>;

/** Turns the session keys of an SRTP or SRTCP session's ciphers (both directions) into KeyObjects; idempotent. */
export function useKeyObjects(session: SrtpSession | SrtcpSession): void {
  for (const context of [session.localContext, session.remoteContext]) {
    const cipher = (context as unknown as { cipher?: Keyed } | undefined)?.cipher;
    if (!cipher) continue;
    for (const field of KEY_FIELDS) {
      const key = cipher[field];
      if (Buffer.isBuffer(key)) cipher[field] = createSecretKey(key);
    }
  }
}

let installed = false;

/** Every DTLS transport of this process makes its SRTP sessions' keys KeyObjects once derived; idempotent. */
export function installSrtpKeyObjects(): void {
  if (installed) return;
  installed = true;
  const proto = RTCDtlsTransport.prototype as unknown as { updateSrtpSession(this: RTCDtlsTransport): void };
  const derive = proto.updateSrtpSession;
  proto.updateSrtpSession = function updateSrtpSession(this: RTCDtlsTransport): void {
    derive.call(this);
    useKeyObjects(this.srtp);
    useKeyObjects(this.srtcp);
  };
}
