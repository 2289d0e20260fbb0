/**
 * WebRTC web calls (src/media/webrtc/, docs/deploy.md "WebRTC"): the ICE servers handed to
 * browsers, the UDP ports and the address the server advertises, and whether it also takes ICE
 * over TCP for networks that block UDP. Parsed once with the rest of the configuration.
 */
import ipaddr from 'ipaddr.js';
import type { EnvReader } from './env-reader.ts';

/** One STUN or TURN server as RTCPeerConnection takes it. */
export interface IceServer {
  urls: string[];
  username?: string;
  credential?: string;
}

export interface RtcConfig {
  /** Whether web calls may use WebRTC (RTC_ENABLED, default true); when false the signalling routes answer 404 and clients fall back to the WebSocket. */
  readonly enabled: boolean;
  /**
   * STUN/TURN servers handed to callers (RTC_ICE_SERVERS: a JSON array of `{urls, username?,
   * credential?}`, default none: host candidates only).
   */
  readonly iceServers: readonly IceServer[];
  /**
   * The shared secret of a TURN server that takes time-limited credentials (coturn's
   * `use-auth-secret` / `static-auth-secret`; RTC_TURN_SECRET). With it, every `turn:`/`turns:`
   * server of RTC_ICE_SERVERS without a username gets credentials made per call.
   */
  readonly turnSecret: string | null;
  /** How long per-call TURN credentials stay valid, ms (RTC_TURN_TTL_MS, default 3600000). */
  readonly turnTtlMs: number;
  /** The UDP ports the server's ICE candidates use (RTC_UDP_PORTS, `MIN-MAX`, default any free port). */
  readonly udpPorts: readonly [number, number] | null;
  /** The address the server advertises in its candidates, for a server behind NAT (RTC_PUBLIC_IP, default the interfaces' own). */
  readonly publicIp: string | null;
  /** The one local address ICE binds and advertises (RTC_BIND_ADDRESS, default every interface); `127.0.0.1` keeps calls on loopback. */
  readonly bindAddress: string | null;
  /** Also offer ICE over TCP (passive host candidates) for networks that block UDP (RTC_ICE_TCP, default true). */
  readonly iceTcp: boolean;
  /** How long a WebRTC session may take from its offer to connected media before it is dropped, ms (RTC_CONNECT_TIMEOUT_MS, default 15000). */
  readonly connectTimeoutMs: number;
}

export function readRtcConfig(reader: EnvReader, problems: string[]): RtcConfig {
  return {
    enabled: reader.boolean('RTC_ENABLED', true),
    iceServers: readIceServers(reader.optional('RTC_ICE_SERVERS'), problems),
    turnSecret: reader.optional('RTC_TURN_SECRET'),
    turnTtlMs: reader.integer('RTC_TURN_TTL_MS', 3_600_000, 60_000, 86_400_000),
    udpPorts: readPortRange(reader.optional('RTC_UDP_PORTS'), problems),
    publicIp: readAddress('RTC_PUBLIC_IP', reader.optional('RTC_PUBLIC_IP'), problems),
    bindAddress: readAddress('RTC_BIND_ADDRESS', reader.optional('RTC_BIND_ADDRESS'), problems),
    iceTcp: reader.boolean('RTC_ICE_TCP', true),
    connectTimeoutMs: reader.integer('RTC_CONNECT_TIMEOUT_MS', 15_000, 1_000, 120_000),
  };
}

function readIceServers(raw: string | null, problems: string[]): IceServer[] {
  if (raw === null) return [];
  const bad = () => {
    problems.push('RTC_ICE_SERVERS must be a JSON array of {"urls": "stun:..." or ["turn:...", ...], "username"?: string, "credential"?: string}');
    return [];
  };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return bad();
  }
  if (!Array.isArray(value) || value.length > 16) return bad();
  const servers: IceServer[] = [];
  for (const entry of value as unknown[]) {
    if (typeof entry !== 'object' || entry === null) return bad();
    const { urls, username, credential } = entry as Record<string, unknown>;
    const list = typeof urls === 'string' ? [urls] : urls;
    if (!Array.isArray(list) || list.length === 0 || !list.every((u) => typeof u === 'string' && /^(stun|stuns|turn|turns):/.test(u))) return bad();
    if ((username !== undefined && typeof username !== 'string') || (credential !== undefined && typeof credential !== 'string')) return bad();
    servers.push({ urls: list as string[], ...(username !== undefined ? { username } : {}), ...(credential !== undefined ? { credential } : {}) });
  }
  return servers;
}

function readPortRange(raw: string | null, problems: string[]): [number, number] | null {
  if (raw === null) return null;
  const match = /^(\d{1,5})-(\d{1,5})$/.exec(raw.trim());
  const min = Number(match?.[1]);
  const max = Number(match?.[2]);
  if (!match || min < 1024 || max > 65535 || min >= max) {
    problems.push(`RTC_UDP_PORTS must be MIN-MAX with 1024 <= MIN < MAX <= 65535 (got "${raw}")`);
    return null;
  }
  return [min, max];
}

function readAddress(name: string, raw: string | null, problems: string[]): string | null {
  if (raw === null) return null;
  if (!ipaddr.IPv4.isValidFourPartDecimal(raw.trim())) {
    problems.push(`${name} must be an IPv4 address (got "${raw}")`);
    return null;
  }
  return raw.trim();
}
