import ipaddr from 'ipaddr.js';
import type { EnvReader } from './env-reader.ts';

/** The codecs the SIP endpoint can carry (src/media/sip/rtp-codec.ts). */
export const SIP_CODECS = ['opus', 'pcmu', 'pcma'] as const;
export type SipCodec = (typeof SIP_CODECS)[number];

/** The server's own SIP endpoint (issue 24, docs/telephony.md); off unless SIP_PORT is set. */
export interface SipConfig {
  /** Port of the SIP endpoint, UDP and TCP (SIP_PORT; 0 picks a free one). */
  readonly port: number;
  /** Address the SIP and RTP sockets bind (SIP_BIND_HOST, default HOST). */
  readonly bindHost: string;
  /** The host or address carriers reach this server at, written into Contact and SDP (SIP_PUBLIC_HOST, default the bind address). */
  readonly publicHost: string;
  /** Source addresses allowed to send INVITEs (SIP_ALLOWED_CIDRS, comma-separated); empty: any (digest and the number decide). */
  readonly allowedCidrs: readonly string[];
  /** The RTP port range, even ports only (SIP_RTP_PORT_MIN and SIP_RTP_PORT_MAX, default 10000-20000). */
  readonly rtpPortMin: number;
  readonly rtpPortMax: number;
  /** INVITEs per minute one source address may send (SIP_INVITES_PER_MINUTE, default 120). */
  readonly invitesPerMinute: number;
  /** How long a call we place over a trunk may ring before its INVITE is cancelled and it ends `dial_no_answer`, ms (SIP_RING_TIMEOUT_MS, default 60 000). */
  readonly ringTimeoutMs: number;
  /**
   * Digest credentials inbound INVITEs must answer (SIP_INBOUND_AUTH_USERNAME and
   * SIP_INBOUND_AUTH_PASSWORD, both or neither); null (the default): inbound INVITEs are not
   * challenged (carriers deliver calls unauthenticated; SIP_ALLOWED_CIDRS limits who may send them).
   */
  readonly inboundAuth: { username: string; password: string } | null;
  /** Bounds of SIP over TCP on the same port (./src/media/sip/sip-stream.ts). */
  readonly tcp: SipTcpLimits;
  /**
   * The codecs offered and taken, most preferred first (SIP_CODECS, default `opus,pcmu,pcma`):
   * Opus is the wideband path but costs several times G.711's CPU (BENCHMARKS.md, sip-codec).
   */
  readonly codecs: readonly SipCodec[];
}

/** Bounds of the SIP endpoint's TCP connections. */
export interface SipTcpLimits {
  /** Connections one source address may hold open at once; more are closed on accept (SIP_TCP_CONNECTIONS_PER_ADDRESS, default 16). */
  readonly connectionsPerAddress: number;
  /** How long one message may take to arrive once its first byte has, headers and body, ms; slower is closed (SIP_TCP_READ_TIMEOUT_MS, default 5 000). */
  readonly readTimeoutMs: number;
  /** A connection with no traffic and no call on it for this long is closed, ms (SIP_TCP_IDLE_TIMEOUT_MS, default 120 000). */
  readonly idleTimeoutMs: number;
}

/** SIP_* variables; null when SIP_PORT is not set. Bad values go to `problems`, named. */
export function readSipConfig(reader: EnvReader, problems: string[], host: string): SipConfig | null {
  if (reader.optional('SIP_PORT') === null) return null;
  const port = reader.integer('SIP_PORT', 5060, 0, 65535);
  const bindHost = reader.string('SIP_BIND_HOST', host);
  const publicHost = reader.string('SIP_PUBLIC_HOST', bindHost === '0.0.0.0' || bindHost === '::' ? '127.0.0.1' : bindHost);
  if (!/^[A-Za-z0-9.:-]{1,253}$/.test(publicHost)) problems.push('SIP_PUBLIC_HOST must be a host name or IP address');
  const allowedCidrs = reader.list('SIP_ALLOWED_CIDRS');
  for (const cidr of allowedCidrs) {
    try {
      ipaddr.parseCIDR(cidr);
    } catch {
      problems.push(`SIP_ALLOWED_CIDRS: "${cidr}" is not a CIDR range (e.g. 203.0.113.0/24)`);
    }
  }
  const rtpPortMin = reader.integer('SIP_RTP_PORT_MIN', 10_000, 1024, 65_534);
  const rtpPortMax = reader.integer('SIP_RTP_PORT_MAX', 20_000, 1025, 65_535);
  if (rtpPortMax - rtpPortMin < 2) problems.push('SIP_RTP_PORT_MAX must be at least SIP_RTP_PORT_MIN + 2');
  const authUser = reader.optional('SIP_INBOUND_AUTH_USERNAME');
  const authPassword = reader.optional('SIP_INBOUND_AUTH_PASSWORD');
  if ((authUser === null) !== (authPassword === null)) problems.push('SIP_INBOUND_AUTH_USERNAME and SIP_INBOUND_AUTH_PASSWORD must be set together');
  if (authUser !== null && !/^[\x21-\x7e]{1,128}$/.test(authUser)) problems.push('SIP_INBOUND_AUTH_USERNAME must be 1 to 128 printable characters without spaces');
  if (authPassword !== null && (authPassword.length < 8 || authPassword.length > 256)) problems.push('SIP_INBOUND_AUTH_PASSWORD must be 8 to 256 characters');
  const codecs = reader.list('SIP_CODECS').map((c) => c.toLowerCase());
  const known = (c: string): c is SipCodec => (SIP_CODECS as readonly string[]).includes(c);
  if (codecs.some((c) => !known(c)) || new Set(codecs).size !== codecs.length) {
    problems.push(`SIP_CODECS must list distinct codecs of ${SIP_CODECS.join(', ')}, most preferred first`);
  }
  return {
    port,
    bindHost,
    publicHost,
    allowedCidrs,
    rtpPortMin: rtpPortMin + (rtpPortMin % 2),
    rtpPortMax,
    invitesPerMinute: reader.integer('SIP_INVITES_PER_MINUTE', 120, 1, 1_000_000),
    ringTimeoutMs: reader.integer('SIP_RING_TIMEOUT_MS', 60_000, 1_000, 600_000),
    inboundAuth: authUser !== null && authPassword !== null ? { username: authUser, password: authPassword } : null,
    tcp: {
      connectionsPerAddress: reader.integer('SIP_TCP_CONNECTIONS_PER_ADDRESS', 16, 1, 10_000),
      readTimeoutMs: reader.integer('SIP_TCP_READ_TIMEOUT_MS', 5_000, 100, 60_000),
      idleTimeoutMs: reader.integer('SIP_TCP_IDLE_TIMEOUT_MS', 120_000, 1_000, 3_600_000),
    },
    codecs: codecs.length > 0 ? codecs.filter(known) : SIP_CODECS,
  };
}
