/**
 * The SDK's WebRTC transport (docs/media-protocol.md, "WebRTC"): the microphone track is sent as
 * it is, the agent's track plays through an <audio> element (so the browser's echo canceller
 * applies to it, which it does not to Web Audio output), and the protocol's JSON messages travel on
 * the "events" data channel. `joinWebRtc` resolves once `call_started` arrived; it throws
 * `RtcUnavailable` when WebRTC cannot carry the call (ICE did not connect in time, the server has
 * no WebRTC), which `'auto'` answers by joining over the WebSocket with the same token.
 */
import { WebCallError } from './errors.ts';
import { type CallStartedMessage, type ServerMessage, parseServerMessage } from './protocol.ts';

/** WebRTC could not carry the call; the token was not used, the WebSocket may. */
export class RtcUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RtcUnavailable';
  }
}

export interface RtcLink {
  /** A protocol message on the data channel. */
  send(text: string): void;
  /** The agent's audio received and played so far, in samples at 48 kHz (the inbound RTP stream's `totalSamplesReceived`), and the microphone's level (0 to 1). */
  stats(): Promise<{ samples: number; inputLevel: number }>;
  /** ICE restart on the call's session (a changed network): resolves once connected again, rejects if the server refuses it or it does not connect in time. */
  restartIce(): Promise<void>;
  /** Closes the connection and stops the agent's audio; idempotent. */
  close(): void;
}

export interface RtcJoinOptions {
  baseUrl: string;
  accessToken: string;
  /** The microphone. */
  track: MediaStreamTrack;
  /** How long ICE and DTLS may take to connect before WebRTC counts as unavailable, ms. */
  connectTimeoutMs: number;
  /** How long `call_started` may take once connected, ms. */
  joinTimeoutMs: number;
  /** Speaker `deviceId` for the <audio> element, where `setSinkId` exists. */
  playbackDeviceId?: string;
  /** Every server message after `call_started`. */
  onMessage(message: ServerMessage): void;
  /** The connection failed or closed after the call started. */
  onClosed(): void;
}

const SESSIONS = '/v2/webrtc/sessions';
/** How long a close waits for messages that arrived with it before it counts as a lost connection, ms. */
const CLOSE_SETTLE_MS = 250;
/** ICE restarts the SDK attempts on its own when the connection fails or stays disconnected (the server takes five). */
const AUTO_RESTARTS = 3;
/** How long the connection may stay `disconnected` before the SDK restarts ICE, ms. */
const DISCONNECTED_RESTART_MS = 1_000;
/** How long a restart may take to connect before the call counts as lost, ms (the server waits 10 s). */
const RESTART_CONNECT_MS = 8_000;

export async function joinWebRtc(options: RtcJoinOptions): Promise<{ link: RtcLink; started: CallStartedMessage }> {
  if (typeof RTCPeerConnection === 'undefined') throw new RtcUnavailable('This browser has no RTCPeerConnection.');
  const auth = { authorization: `Bearer ${options.accessToken}` };
  const iceServers = (await request(`${options.baseUrl}/v2/webrtc/ice-servers`, { headers: auth })).ice_servers as RTCIceServer[];

  const pc = new RTCPeerConnection({ iceServers, bundlePolicy: 'max-bundle' });
  const channel = pc.createDataChannel('events', { negotiated: true, id: 0, ordered: true });
  pc.addTransceiver(options.track, { direction: 'sendrecv' });
  const audio = new Audio();
  audio.autoplay = true;
  pc.ontrack = (event) => {
    audio.srcObject = event.streams[0] ?? new MediaStream([event.track]);
    void audio.play().catch(() => undefined);
  };
  if (options.playbackDeviceId) {
    const sink = audio as HTMLAudioElement & { setSinkId?: (id: string) => Promise<void> };
    void sink.setSinkId?.(options.playbackDeviceId).catch(() => undefined);
  }
  let sessionUrl: string | null = null;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    channel.onmessage = null;
    pc.onconnectionstatechange = null;
    pc.close();
    audio.srcObject = null;
  };
  try {
    await pc.setLocalDescription(await pc.createOffer());
    await gathered(pc, 2_000);
    const answer = await request(`${options.baseUrl}${SESSIONS}`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ sdp: pc.localDescription?.sdp }),
    });
    sessionUrl = `${options.baseUrl}${SESSIONS}/${String(answer.session_id)}`;
    await pc.setRemoteDescription({ type: 'answer', sdp: String(answer.sdp) });
    const started = await new Promise<CallStartedMessage>((resolve, reject) => {
      const fail = (error: Error) => {
        clearTimeout(timer);
        reject(error);
      };
      // ICE first (the fallback's bound), then the join on the data channel.
      let timer = setTimeout(() => fail(new RtcUnavailable(`WebRTC did not connect within ${options.connectTimeoutMs} ms.`)), options.connectTimeoutMs);
      pc.onconnectionstatechange = () => {
        if (pc.connectionState === 'connected') {
          clearTimeout(timer);
          timer = setTimeout(() => fail(new WebCallError('connection_failed', `The server did not accept the call within ${options.joinTimeoutMs} ms.`)), options.joinTimeoutMs);
        } else if (pc.connectionState === 'failed') {
          fail(new RtcUnavailable('WebRTC failed to connect.'));
        }
      };
      channel.onmessage = (event: MessageEvent) => {
        const message = typeof event.data === 'string' ? parseServerMessage(event.data) : null;
        if (message?.type === 'call_started') {
          clearTimeout(timer);
          resolve(message);
        } else if (message?.type === 'error') {
          fail(new WebCallError(message.code, message.message || 'The server refused the call.'));
        }
      };
    });
    channel.onmessage = (event: MessageEvent) => {
      const message = typeof event.data === 'string' ? parseServerMessage(event.data) : null;
      if (message) options.onMessage(message);
    };
    // The server's `call_ended` and its close can reach the page together; the close waits a moment
    // so a message delivered with it still ends the call as the server said (not as a lost connection).
    const lost = () => {
      if (!closed) setTimeout(() => !closed && options.onClosed(), CLOSE_SETTLE_MS);
    };
    channel.onclose = lost;
    // A network change breaks the ICE path: restart ICE on the same session (docs/media-protocol.md,
    // "ICE restarts"), a bounded number of times, before the connection counts as lost.
    let restarting: Promise<void> | null = null;
    let restarts = 0;
    let stateTimer: ReturnType<typeof setTimeout> | undefined;
    const restartIce = (): Promise<void> => {
      restarting ??= restart(pc, `${sessionUrl}`, auth).finally(() => (restarting = null));
      return restarting;
    };
    const autoRestart = () => {
      if (closed || restarting) return;
      if (restarts >= AUTO_RESTARTS) return lost();
      restarts += 1;
      restartIce().catch(lost);
    };
    pc.onconnectionstatechange = () => {
      clearTimeout(stateTimer);
      if (pc.connectionState === 'closed') lost();
      else if (pc.connectionState === 'failed') autoRestart();
      else if (pc.connectionState === 'disconnected') stateTimer = setTimeout(autoRestart, DISCONNECTED_RESTART_MS);
    };
    return {
      started,
      link: {
        send: (text) => {
          if (channel.readyState === 'open') channel.send(text);
        },
        stats: async () => {
          let samples = 0;
          let inputLevel = 0;
          (await pc.getStats()).forEach((report: Record<string, unknown>) => {
            if (report['type'] === 'inbound-rtp' && report['kind'] === 'audio' && typeof report['totalSamplesReceived'] === 'number') samples = report['totalSamplesReceived'];
            if (report['type'] === 'media-source' && report['kind'] === 'audio' && typeof report['audioLevel'] === 'number') inputLevel = report['audioLevel'];
          });
          return { samples, inputLevel };
        },
        restartIce,
        close: () => {
          clearTimeout(stateTimer);
          close();
        },
      },
    };
  } catch (error) {
    // The attempt is dropped on the server too (the token stays unused for the fallback).
    if (sessionUrl) void fetch(sessionUrl, { method: 'DELETE', headers: auth }).catch(() => undefined);
    close();
    throw error;
  }
}

/** One ICE restart: a new offer with new credentials on the session's PATCH, the answer applied, then connected (RESTART_CONNECT_MS at most). */
async function restart(pc: RTCPeerConnection, sessionUrl: string, auth: Record<string, string>): Promise<void> {
  await pc.setLocalDescription(await pc.createOffer({ iceRestart: true }));
  await gathered(pc, 2_000);
  const answer = await request(sessionUrl, { method: 'PATCH', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ sdp: pc.localDescription?.sdp }) });
  await pc.setRemoteDescription({ type: 'answer', sdp: String(answer.sdp) });
  if (pc.connectionState === 'connected') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new RtcUnavailable(`WebRTC did not reconnect within ${RESTART_CONNECT_MS} ms of the ICE restart.`)), RESTART_CONNECT_MS);
    pc.addEventListener('connectionstatechange', function connected() {
      if (pc.connectionState !== 'connected') return;
      clearTimeout(timer);
      pc.removeEventListener('connectionstatechange', connected);
      resolve();
    });
  });
}

/** JSON from a signalling route: 401s are the token's refusals (final); anything else unusable is RtcUnavailable. */
async function request(url: string, init: RequestInit): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  } catch (error) {
    throw new RtcUnavailable(`WebRTC signalling failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (res.status === 401) {
    throw new WebCallError(typeof body.code === 'string' ? body.code : 'token_invalid', typeof body.message === 'string' ? body.message : 'The access token was refused.');
  }
  if (!res.ok) throw new RtcUnavailable(`WebRTC signalling answered ${res.status}.`);
  return body;
}

function gathered(pc: RTCPeerConnection, ms: number): Promise<void> {
  if (pc.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    pc.onicegatheringstatechange = () => {
      if (pc.iceGatheringState !== 'complete') return;
      clearTimeout(timer);
      resolve();
    };
  });
}
