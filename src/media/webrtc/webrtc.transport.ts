/**
 * WebRTC web calls (docs/media-protocol.md, "WebRTC"; issue 23): a WHIP-style signalling exchange
 * on the app's HTTP server, authenticated by the call's access token, and a werift peer connection
 * per call carrying Opus both ways and the protocol's events on a data channel.
 *
 *   GET    /v2/webrtc/ice-servers       the STUN/TURN servers for this call (TURN credentials made per call)
 *   POST   /v2/webrtc/sessions          the SDP offer in, the answer out (201, Location: the session)
 *   PATCH  /v2/webrtc/sessions/:id      trickled ICE candidates of the caller (204), or an ICE restart's offer (200, the answer)
 *   DELETE /v2/webrtc/sessions/:id      hang-up (204)
 *
 * Every request carries `Authorization: Bearer <access_token>`. The offer only checks the token;
 * it is redeemed (registered -> ongoing) once ICE and DTLS have connected, so a caller whose UDP
 * is blocked can fall back to the WebSocket with the same token, and a token redeemed by either
 * transport is refused by the other.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { MediaStreamTrack, RTCPeerConnection, RTCRtpCodecParameters, RtcpRrPacket, RtcpSrPacket, type PeerConfig } from 'werift';
import type { IceServer, RtcConfig } from '../../config/rtc.config.ts';
import { startRestartedIce } from '../../lib/werift-ice-restart.ts';
import { installSrtpKeyObjects } from '../../lib/werift-srtp-keys.ts';
import { opusPayloadTypeOf } from '../../protocol/webrtc-sdp.ts';
import { errors } from '../../domain/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import { CallRefused, type SessionRegistry } from '../session-registry.ts';
import type { Transport, TransportContext, TransportHandle } from '../transport.ts';
import { WebRtcEndpoint, type RtcInboundCounters } from './webrtc.endpoint.ts';

/** The signalling routes' prefix. */
export const WEBRTC_PATH = '/v2/webrtc';
/** Largest SDP offer taken, characters (Chromium's audio-and-data offer is about 4 KB). */
const MAX_SDP_CHARS = 32_768;
/** WebRTC sessions still connecting (offer answered, media not yet flowing) a server holds at most. */
const MAX_CONNECTING = 500;
/** Sessions one call may open while connecting (a retry after a lost answer). */
const MAX_CONNECTING_PER_TOKEN = 3;
/** Trickled candidates one session takes at most. */
const MAX_CANDIDATES = 64;
/** How long gathering the server's own candidates may take before the answer goes without the rest, ms. */
const GATHER_TIMEOUT_MS = 2_000;
/** ICE restarts one session takes at most (a caller whose network changes: each one a new path). */
const MAX_RESTARTS = 5;
/** The least time between two ICE restarts of one session, ms. */
const RESTART_INTERVAL_MS = 2_000;

const SessionParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const OfferBody = Type.Object({
  /** The caller's SDP offer (RTCSessionDescription.sdp). */
  sdp: Type.String({ minLength: 1, maxLength: MAX_SDP_CHARS }),
});
const Candidate = Type.Object({
  candidate: Type.String({ maxLength: 1_024 }),
  sdp_mid: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
  sdp_mline_index: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: 16 }), Type.Null()])),
});
/** PATCH: trickled candidates, or a new offer with new ICE credentials (an ICE restart). */
const PatchBody = Type.Object({
  candidates: Type.Optional(Type.Array(Candidate, { minItems: 1, maxItems: MAX_CANDIDATES })),
  sdp: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_SDP_CHARS })),
});

/** One call's WebRTC session as this server holds it. */
interface RtcSession {
  id: string;
  token: string;
  endpoint: WebRtcEndpoint;
  pc: RTCPeerConnection;
  /** Candidates trickled since the last offer (each ICE restart starts a new count). */
  candidates: number;
  /** The registry joined the call (media flowed and the token was redeemed). */
  joined: boolean;
  /** ICE restarts taken, when the last one began (monotonic ms), and whether one is being answered. */
  restarts: number;
  restartedAt: number;
  restarting: boolean;
}

export const webrtcTransport: Transport = {
  id: 'webrtc',
  start(context: TransportContext): TransportHandle {
    return attachWebRtcTransport(context);
  },
};

function inboundCounters(context: TransportContext): RtcInboundCounters {
  const m = context.metrics;
  return {
    // The same series as the WebSocket's (a registry returns the existing metric for a known name).
    audioDroppedSeconds: m.counter('switchboard_media_audio_dropped_seconds_total', 'Seconds of call audio dropped because a client sent it faster than real time.'),
    messagesDropped: m.counter('switchboard_media_messages_dropped_total', 'Whole call messages dropped over the message rate limits, by kind (audio, text).', ['kind']),
    floodDisconnections: m.counter('switchboard_media_flood_disconnections_total', 'Calls cut off because the client sent audio or messages far faster than real time.'),
    rtpDropped: m.counter('switchboard_webrtc_rtp_dropped_total', 'RTP packets of WebRTC callers dropped unread, by reason (payload_type: not the negotiated Opus).', ['reason']),
  };
}

/** Registers the signalling routes on the app; its handle closes every session left. */
export function attachWebRtcTransport(context: TransportContext): TransportHandle {
  const { app: http, registry, rtc } = context;
  const log = registry.log;
  const sessions = new Map<string, RtcSession>();
  const connecting = new Map<string, number>();
  const counters = inboundCounters(context);
  const now = () => performance.now();
  let closed = false;
  if (!rtc.enabled) return { close: async () => {} };
  installSrtpKeyObjects(); // SRTP at a third of werift's own cost (src/lib/werift-srtp-keys.ts)

  const bearer = (request: FastifyRequest): string => {
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer ([\x21-\x7e]{1,4096})$/.exec(header) : null;
    if (!match?.[1]) throw errors.accessTokenInvalid();
    return match[1];
  };
  /** Checks the token without redeeming it: the registry's refusals as AppErrors (401, 503). */
  const checkToken = async (token: string): Promise<void> => {
    try {
      await registry.check(token);
    } catch (error) {
      if (!(error instanceof CallRefused)) throw error;
      if (error.reason === 'token_used') throw errors.accessTokenUsed();
      if (error.reason === 'token_expired') throw errors.accessTokenExpired();
      if (error.reason === 'token_invalid') throw errors.accessTokenInvalid();
      throw errors.serverShuttingDown();
    }
  };
  const sessionOf = (request: FastifyRequest<{ Params: { id: string } }>): RtcSession => {
    const session = sessions.get(request.params.id);
    // The token must be the session's own: a session id alone never controls a call.
    if (!session || session.token !== bearer(request)) throw errors.webrtcSessionNotFound(request.params.id);
    return session;
  };

  http.get(`${WEBRTC_PATH}/ice-servers`, { schema: { hide: true } }, async (request) => {
    const token = bearer(request);
    await checkToken(token);
    return { ice_servers: iceServersFor(rtc, token) };
  });

  http.post(`${WEBRTC_PATH}/sessions`, { schema: { hide: true, body: OfferBody } }, async (request, reply) => {
    const token = bearer(request);
    const { sdp } = request.body as { sdp: string };
    if (!/^v=0\r?\n/.test(sdp) || !/^m=audio /m.test(sdp)) throw errors.webrtcInvalid('body/sdp must be an SDP offer with an audio m-line.');
    if (closed) throw errors.serverShuttingDown();
    await checkToken(token);
    const pending = connecting.get(token) ?? 0;
    if (pending >= MAX_CONNECTING_PER_TOKEN || [...connecting.values()].reduce((a, b) => a + b, 0) >= MAX_CONNECTING) throw errors.webrtcBusy();

    const pc = new RTCPeerConnection(peerConfig(rtc));
    const track = new MediaStreamTrack({ kind: 'audio' });
    const channel = pc.createDataChannel('events', { negotiated: true, id: 0, ordered: true });
    const endpoint = new WebRtcEndpoint(pc, track, channel, { counters, now, dtx: /usedtx=1/.test(sdp) });
    const session: RtcSession = { id: `rtc_${randomBytes(12).toString('base64url')}`, token, endpoint, pc, candidates: 0, joined: false, restarts: 0, restartedAt: -Infinity, restarting: false };
    pc.onTrack.subscribe((remote) => endpoint.receive(remote));
    let answer: string;
    try {
      await pc.setRemoteDescription({ type: 'offer', sdp });
      const transceiver = pc.getTransceivers().find((t) => t.kind === 'audio');
      if (!transceiver) throw new Error('no audio transceiver');
      transceiver.setDirection('sendrecv');
      await transceiver.sender.replaceTrack(track);
      // The caller's receiver reports on our stream: their jitter sizes its playout delay (playedMs).
      const sender = transceiver.sender;
      sender.onRtcp.subscribe((packet) => {
        if (packet.type !== RtcpRrPacket.type && packet.type !== RtcpSrPacket.type) return;
        for (const report of packet.reports) if (report.ssrc === sender.ssrc) endpoint.receiverReport(report.jitter);
      });
      await pc.setLocalDescription(await pc.createAnswer());
      // RTP both ways carries the offerer's number for Opus (Chromium 111, werift 96).
      const payloadType = opusPayloadTypeOf(pc.localDescription?.sdp ?? '');
      if (payloadType === null) throw new Error('no Opus in the answer');
      endpoint.negotiated(payloadType, transceiver.receiver.dtlsTransport);
      await gathered(pc, GATHER_TIMEOUT_MS);
      answer = advertised(pc.localDescription?.sdp ?? '', rtc.publicIp);
    } catch (error) {
      endpoint.close();
      log.info({ err: error }, 'webrtc offer refused');
      throw errors.webrtcInvalid('body/sdp could not be negotiated: an offer with Opus audio, BUNDLE and DTLS is expected.');
    }

    sessions.set(session.id, session);
    connecting.set(token, pending + 1);
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const left = (connecting.get(token) ?? 1) - 1;
      if (left > 0) connecting.set(token, left);
      else connecting.delete(token);
    };
    endpoint.onClosed = () => {
      settle();
      sessions.delete(session.id);
    };
    // Media never flowed in time: the token stays unused (the caller may fall back to the WebSocket).
    const timer = setTimeout(() => {
      if (!session.joined) endpoint.close();
    }, rtc.connectTimeoutMs);
    timer.unref();
    pc.connectionStateChange.subscribe((state) => {
      if (state !== 'connected' || session.joined || settled) return;
      session.joined = true;
      settle();
      void join(registry, session, log);
    });
    void reply.code(201).header('location', `${WEBRTC_PATH}/sessions/${session.id}`);
    return { session_id: session.id, sdp: answer };
  });

  http.patch(`${WEBRTC_PATH}/sessions/:id`, { schema: { hide: true, params: SessionParams, body: PatchBody } }, async (request, reply) => {
    const session = sessionOf(request as FastifyRequest<{ Params: { id: string } }>);
    const body = request.body as { candidates?: { candidate: string; sdp_mid?: string | null; sdp_mline_index?: number | null }[]; sdp?: string };
    if ((body.candidates === undefined) === (body.sdp === undefined)) throw errors.webrtcInvalid('body must carry either candidates or sdp (an ICE restart\'s offer), not both.');
    if (body.sdp !== undefined) return { sdp: await restartIce(session, body.sdp, rtc.publicIp, now()) };
    const candidates = body.candidates ?? [];
    if (session.candidates + candidates.length > MAX_CANDIDATES) throw errors.webrtcInvalid(`body/candidates: a session takes at most ${MAX_CANDIDATES} candidates.`);
    session.candidates += candidates.length;
    for (const [i, c] of candidates.entries()) {
      if (c.candidate === '') continue; // end of candidates
      try {
        await session.pc.addIceCandidate({ candidate: c.candidate, sdpMid: c.sdp_mid ?? '0', sdpMLineIndex: c.sdp_mline_index ?? 0 });
      } catch {
        throw errors.webrtcInvalid(`body/candidates/${i}/candidate is not an ICE candidate of this session.`);
      }
    }
    return reply.code(204).send();
  });

  http.delete(`${WEBRTC_PATH}/sessions/:id`, { schema: { hide: true, params: SessionParams } }, async (request, reply) => {
    const session = sessionOf(request as FastifyRequest<{ Params: { id: string } }>);
    // Joined: the call ends user_hangup through its session; not yet: the token stays unused.
    if (session.joined) session.endpoint.hangup();
    else session.endpoint.close();
    return reply.code(204).send();
  });

  return {
    async close() {
      // The registry has ended the calls by now; what is left never connected, or is closing.
      closed = true;
      for (const session of [...sessions.values()]) session.endpoint.close();
    },
  };
}

/** Media flows: the token is redeemed and the call runs on the endpoint, or the caller is told why not. */
async function join(registry: SessionRegistry, session: RtcSession, log: Logger): Promise<void> {
  try {
    await registry.join(session.token, session.endpoint);
  } catch (error) {
    if (error instanceof CallRefused) {
      const code = error.reason === 'shutting_down' ? 'server_shutting_down' : error.reason === 'failed' ? 'internal_error' : error.reason;
      return session.endpoint.refuse(code, error.message);
    }
    log.error({ err: error }, 'webrtc join failed');
    session.endpoint.refuse('internal_error', 'The call could not be joined.');
  }
}

/**
 * An ICE restart (RFC 8445 9; JSEP's `restartIce`): the caller's network changed, and its new
 * offer carries new ICE credentials and candidates. werift's answerer restarts its ICE agent when
 * the remote credentials change and keeps the DTLS association, the SRTP keys and the data channel:
 * the call goes on, on the token already redeemed. Bounded per session: MAX_RESTARTS, one at a
 * time, RESTART_INTERVAL_MS apart; the endpoint drops the caller if the new path does not connect.
 */
async function restartIce(session: RtcSession, sdp: string, publicIp: string | null, nowMs: number): Promise<string> {
  const { pc, endpoint } = session;
  if (session.restarts >= MAX_RESTARTS) throw errors.webrtcRestartLimited(`A WebRTC session takes at most ${MAX_RESTARTS} ICE restarts.`);
  const wait = session.restartedAt + RESTART_INTERVAL_MS - nowMs;
  if (session.restarting || wait > 0) throw errors.webrtcRestartLimited(`ICE restarts of one session are at least ${RESTART_INTERVAL_MS} ms apart.`, Math.max(wait, 100));
  const credentials = iceCredentialsOf(sdp);
  if (!/^v=0\r?\n/.test(sdp) || !/^m=audio /m.test(sdp) || credentials === null) throw errors.webrtcInvalid('body/sdp must be an SDP offer with an audio m-line and ICE credentials.');
  if (credentials === iceCredentialsOf(pc.remoteDescription?.sdp ?? '')) throw errors.webrtcInvalid('body/sdp must carry new ICE credentials (a=ice-ufrag, a=ice-pwd): a session is renegotiated only to restart ICE.');
  session.restarting = true;
  session.restarts += 1;
  session.restartedAt = nowMs;
  session.candidates = 0;
  // From here the call waits for the new path (a bounded time): the old one is taken as gone.
  endpoint.restarting();
  try {
    await pc.setRemoteDescription({ type: 'offer', sdp });
    await pc.setLocalDescription(await pc.createAnswer());
    await gathered(pc, GATHER_TIMEOUT_MS);
    // The checks run once the caller has the answer too; a restart that never connects is the endpoint's timer's.
    void startRestartedIce(pc, RESTART_INTERVAL_MS * 4).then(() => endpoint.restarted(), () => {});
    return advertised(pc.localDescription?.sdp ?? '', publicIp);
  } catch {
    throw errors.webrtcInvalid('body/sdp could not be negotiated as an ICE restart of this session: the same media, new ICE credentials.');
  } finally {
    session.restarting = false;
  }
}

/** The first `ice-ufrag:ice-pwd` of an SDP, or null. */
function iceCredentialsOf(sdp: string): string | null {
  const ufrag = /^a=ice-ufrag:(\S+)/m.exec(sdp)?.[1];
  const pwd = /^a=ice-pwd:(\S+)/m.exec(sdp)?.[1];
  return ufrag && pwd ? `${ufrag}:${pwd}` : null;
}

/** The werift configuration of one call's peer connection. */
function peerConfig(rtc: RtcConfig): Partial<PeerConfig> {
  return {
    codecs: {
      audio: [
        new RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: 48_000, channels: 2, payloadType: 111, parameters: 'minptime=10;useinbandfec=1' }),
      ],
    },
    // The server's candidates are its interfaces' (or RTC_PUBLIC_IP): werift's default would ask a public STUN server on every call.
    iceServers: [],
    bundlePolicy: 'max-bundle',
    iceUseIpv6: false,
    iceUseTcp: rtc.iceTcp,
    iceTcpPassive: rtc.iceTcp,
    ...(rtc.udpPorts ? { icePortRange: [rtc.udpPorts[0], rtc.udpPorts[1]] as [number, number] } : {}),
    ...(rtc.bindAddress
      ? { iceInterfaceAddresses: { udp4: rtc.bindAddress, udp6: undefined }, iceAdditionalHostAddresses: [rtc.bindAddress] }
      : {}),
  };
}

/** Resolves once the connection's own candidates are gathered, or after `ms`. */
async function gathered(pc: RTCPeerConnection, ms: number): Promise<void> {
  if (pc.iceGatheringState === 'complete') return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    new Promise<void>((resolve) => pc.iceGatheringStateChange.subscribe((state) => state === 'complete' && resolve())),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
  ]);
  clearTimeout(timer);
}

/**
 * The answer as the caller must see it: behind NAT (RTC_PUBLIC_IP) every host candidate names the
 * public address with its own port (the NAT forwards RTC_UDP_PORTS one to one), as mediasoup's
 * `announcedAddress` does.
 */
export function advertised(sdp: string, publicIp: string | null): string {
  if (publicIp === null) return sdp;
  return sdp.replace(/^(a=candidate:\S+ \d+ \S+ \d+ )(\S+)( \d+ typ host)/gm, (_m, head: string, _ip: string, tail: string) => `${head}${publicIp}${tail}`);
}

/**
 * The STUN/TURN servers handed to one call. With RTC_TURN_SECRET, each TURN server without its own
 * username gets credentials made for this call: coturn's REST scheme (`use-auth-secret`), username
 * `<expiry in s>:<call id>`, credential base64(HMAC-SHA1(secret, username)).
 */
export function iceServersFor(rtc: RtcConfig, token: string, nowMs = Date.now()): IceServer[] {
  const secret = rtc.turnSecret;
  if (secret === null) return rtc.iceServers.map((s) => ({ ...s }));
  const callId = callIdOf(token);
  const username = `${Math.floor((nowMs + rtc.turnTtlMs) / 1000)}:${callId}`;
  const credential = createHmac('sha1', secret).update(username).digest('base64');
  return rtc.iceServers.map((s) => (s.username === undefined && s.urls.some((u) => u.startsWith('turn')) ? { ...s, username, credential } : { ...s }));
}

/** The call id a (checked) token names, for the TURN username; never the token itself. */
function callIdOf(token: string): string {
  try {
    const claims = JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString('utf8')) as { cid?: unknown };
    return typeof claims.cid === 'string' ? claims.cid : 'call';
  } catch {
    return 'call';
  }
}
