/// <reference path="./build-constants.d.ts" />
import { TypedEmitter } from './emitter.ts';
import { SERVER_ERROR_MESSAGES, WebCallError, microphoneError } from './errors.ts';
import {
  PROTOCOL_VERSION,
  WIRE_SAMPLE_RATE,
  type CallStartedMessage,
  type ClientMessage,
  type ServerMessage,
  type TranscriptEntry,
  parseServerMessage,
  webCallUrl,
} from './protocol.ts';
import {
  CAPTURE_PROCESSOR,
  PLAYBACK_PROCESSOR,
  type CaptureCommand,
  type CaptureEvent,
  type PlaybackCommand,
  type PlaybackEvent,
  type PlaybackOptions,
} from './worklets/messages.ts';
import { type RtcLink, RtcUnavailable, joinWebRtc } from './rtc-transport.ts';

/** How a call is carried: WebRTC (Opus on UDP; the browser's echo canceller applies), the WebSocket (PCM on TCP), or WebRTC with the WebSocket as fallback. */
export type CallTransport = 'auto' | 'webrtc' | 'websocket';

export interface WebCallClientOptions {
  /** The Switchboard server, e.g. `https://voice.example.com` (default: the page's origin). */
  baseUrl?: string;
  /** Agent audio buffered before playing, absorbing network jitter, in ms (default 80). */
  prebufferMs?: number;
  /** How often a `ping` is sent during a call, in ms (default 2000). */
  keepAliveIntervalMs?: number;
  /** Silence from the server (no message, no pong) after which the connection counts as lost, in ms (default 10000). */
  connectionTimeoutMs?: number;
  /** How long `startCall()` waits for the server to accept the join, in ms (default 10000). */
  joinTimeoutMs?: number;
  /** With `transport: 'auto'`, how long WebRTC may take to connect before the call falls back to the WebSocket, in ms (default 5000). */
  webrtcConnectTimeoutMs?: number;
}

export interface StartCallOptions {
  /**
   * The `access_token` of create-web-call (single use, valid 30 s), or a promise of it, such as
   * your backend's answer: a promise is awaited once the microphone is open (so a slow permission
   * prompt cannot expire the token), and its failure is reported like any other failed start
   * (`access_token_failed`, emitted as `error`).
   */
  accessToken: string | PromiseLike<string>;
  /** Sample rate of the AudioContext in Hz (default: the device's). The wire is always 16 kHz. */
  sampleRate?: number;
  /** `deviceId` of the microphone (from `navigator.mediaDevices.enumerateDevices()`). */
  captureDeviceId?: string;
  /** `deviceId` of the speaker; used where `AudioContext.setSinkId` exists (Chromium 110+). */
  playbackDeviceId?: string;
  /** Emit `audio` events with the agent samples as they are played (default false; WebSocket calls only). */
  emitRawAudioSamples?: boolean;
  /**
   * `'auto'` (default): WebRTC, falling back to the WebSocket with the same token when WebRTC has
   * not connected within `webrtcConnectTimeoutMs`; `'webrtc'` or `'websocket'` only.
   */
  transport?: CallTransport;
}

export interface CallStartedEvent {
  call_id: string;
  agent: CallStartedMessage['agent'];
  /** How the call is carried: `webrtc` or `websocket`. */
  transport: 'webrtc' | 'websocket';
}

export interface CallEndedEvent {
  /** The call's final status as the server reported it; null when the client could not learn it. */
  call_status: 'ended' | 'error' | null;
  /** The server's `disconnection_reason`; `connection_lost` when the connection dropped first. */
  disconnection_reason: string;
}

export interface UpdateEvent {
  /** The last utterances (up to 10), oldest first; the last may still change while `final` is false. */
  transcript: TranscriptEntry[];
  final: boolean;
}

/** The events of a WebCallClient and their payloads. */
export interface WebCallEvents {
  /** The server accepted the join; the call is `ongoing`. */
  call_started: (event: CallStartedEvent) => void;
  /** Audio flows both ways: the microphone is being sent and agent audio will play. */
  call_ready: () => void;
  /** The call is over (whoever ended it); every resource is released. */
  call_ended: (event: CallEndedEvent) => void;
  agent_start_talking: (event: { utterance_id: string }) => void;
  agent_stop_talking: (event: { utterance_id: string; cut_off: boolean }) => void;
  /** Live transcript. */
  update: (event: UpdateEvent) => void;
  /** A conversation-flow agent moved between nodes. */
  node_transition: (event: { from: string | null; to: string }) => void;
  /** A custom LLM's server sent data for the page (its `metadata` event): any JSON value. */
  metadata: (event: { metadata: unknown }) => void;
  /** Something failed; `error.code` says what (see WebCallErrorCode). */
  error: (error: WebCallError) => void;
  /** Agent samples as played, at `stats.outputSampleRate` (only with `emitRawAudioSamples`). */
  audio: (samples: Float32Array) => void;
}

/** Counters of the current (or last) call. */
export interface WebCallStats {
  /** 16 kHz samples sent to the server (microphone, or silence while muted). */
  sentSamples: number;
  /** 16 kHz agent samples received. */
  receivedSamples: number;
  /** Agent samples played, at `outputSampleRate`. */
  playedSamples: number;
  /** Agent samples dropped (barge-in `clear`, or overflow), at `outputSampleRate`. */
  droppedSamples: number;
  /** Agent samples waiting in the jitter buffer, at `outputSampleRate`. */
  queuedSamples: number;
  /** The AudioContext's rate in Hz (0 before a call). */
  outputSampleRate: number;
  /** RMS level of the last microphone frame, 0 to 1. */
  inputLevel: number;
}

export type CallState = 'idle' | 'connecting' | 'ongoing' | 'ending';

/** Resources of one call; closed once. */
interface Session {
  ws: WebSocket | null;
  /** The WebRTC connection, when the call runs over WebRTC. */
  rtc: RtcLink | null;
  context: AudioContext | null;
  stream: MediaStream | null;
  capture: AudioWorkletNode | null;
  playback: AudioWorkletNode | null;
  source: MediaStreamAudioSourceNode | null;
  timers: ReturnType<typeof setInterval>[];
  lastHeardAt: number;
  callId: string | null;
  ended: boolean;
  /** Settles the pending `startCall()` (join accepted or refused). */
  settleJoin: ((error: WebCallError | null) => void) | null;
  /** Resolves the pending `stopCall()` promises when the call has ended. */
  onEnded: (() => void)[];
}

let workletUrls: { capture: string; playback: string } | null = null;
function getWorkletUrls() {
  workletUrls ??= {
    capture: URL.createObjectURL(new Blob([__SWITCHBOARD_CAPTURE_WORKLET__], { type: 'text/javascript' })),
    playback: URL.createObjectURL(new Blob([__SWITCHBOARD_PLAYBACK_WORKLET__], { type: 'text/javascript' })),
  };
  return workletUrls;
}

/**
 * Joins Switchboard web calls from a browser: microphone in, agent audio out, live events.
 *
 * ```ts
 * const client = new WebCallClient();
 * client.on('update', ({ transcript }) => render(transcript));
 * await client.startCall({ accessToken }); // from your backend's create-web-call
 * ```
 */
export class WebCallClient extends TypedEmitter<WebCallEvents> {
  readonly baseUrl: string;
  readonly #prebufferMs: number;
  readonly #keepAliveMs: number;
  readonly #timeoutMs: number;
  readonly #joinTimeoutMs: number;
  readonly #rtcConnectTimeoutMs: number;
  #state: CallState = 'idle';
  #session: Session | null = null;
  #muted = false;
  #stats: WebCallStats = emptyStats();

  constructor(options: WebCallClientOptions = {}) {
    super();
    this.baseUrl = options.baseUrl ?? globalThis.location?.origin ?? '';
    this.#prebufferMs = options.prebufferMs ?? 80;
    this.#keepAliveMs = options.keepAliveIntervalMs ?? 2000;
    this.#timeoutMs = options.connectionTimeoutMs ?? 10_000;
    this.#joinTimeoutMs = options.joinTimeoutMs ?? 10_000;
    this.#rtcConnectTimeoutMs = options.webrtcConnectTimeoutMs ?? 5_000;
  }

  /** Where the client is: `idle` (no call), `connecting`, `ongoing`, `ending` (hanging up). */
  get state(): CallState {
    return this.#state;
  }

  /** The id of the current call, once started. */
  get callId(): string | null {
    return this.#session?.callId ?? null;
  }

  get isMuted(): boolean {
    return this.#muted;
  }

  /** A snapshot of the current (or last) call's counters. */
  get stats(): WebCallStats {
    return { ...this.#stats };
  }

  /**
   * Opens the microphone, joins the call with its access token and starts audio both ways.
   * Call it from a user gesture (a click) so the browser lets audio play. Resolves once the server
   * accepted the join (after `call_started` and `call_ready`); rejects with a WebCallError (also
   * emitted as `error`) when the microphone is refused, the token is bad, or the server is unreachable.
   */
  async startCall(options: StartCallOptions): Promise<void> {
    // Every failed start is emitted as `error` too (pages show that, then re-enable their button).
    if (this.#state !== 'idle') return this.#fail(new WebCallError('call_in_progress', 'A call is already running on this client; stopCall() first.'));
    const accessToken = options?.accessToken;
    if (!isThenable(accessToken) && !isToken(accessToken)) return this.#fail(invalidToken());
    // A failure before the token is awaited must not leave its rejection unhandled in the page.
    if (isThenable(accessToken)) Promise.resolve(accessToken).catch(() => undefined);
    const unsupported = missingFeature();
    if (unsupported) return this.#fail(new WebCallError('unsupported_browser', unsupported));

    this.#state = 'connecting';
    this.#muted = false;
    this.#stats = emptyStats();
    const session: Session = {
      ws: null, rtc: null, context: null, stream: null, capture: null, playback: null, source: null,
      timers: [], lastHeardAt: Date.now(), callId: null, ended: false, settleJoin: null, onEnded: [],
    };
    this.#session = session;
    try {
      // Created before any await, so it counts as started by the user's gesture.
      const context = new AudioContext({ latencyHint: 'interactive', ...(options.sampleRate ? { sampleRate: options.sampleRate } : {}) });
      session.context = context;
      void context.resume().catch(() => undefined);
      this.#stats.outputSampleRate = context.sampleRate;

      const transport = options.transport ?? 'auto';
      try {
        session.stream = await openMicrophone(options.captureDeviceId, transport === 'websocket');
      } catch (error) {
        throw microphoneError(error);
      }
      this.#checkLive(session);

      const urls = getWorkletUrls();
      await Promise.all([context.audioWorklet.addModule(urls.capture), context.audioWorklet.addModule(urls.playback)]);
      this.#checkLive(session);
      this.#startPlayback(session, context, options.emitRawAudioSamples === true);
      if (options.playbackDeviceId) await setSink(context, options.playbackDeviceId);

      const token = await resolveToken(accessToken);
      this.#checkLive(session);
      let started = transport === 'websocket' ? null : await this.#joinRtc(session, token, transport, options.playbackDeviceId);
      this.#checkLive(session);
      // Over WebRTC the microphone track is sent as it is and the agent plays from an <audio> element.
      if (!started) {
        started = await this.#join(session, token);
        this.#checkLive(session);
        this.#startCapture(session, context);
      }
      session.callId = started.call_id;
      this.#state = 'ongoing';
      session.timers.push(setInterval(() => this.#keepAlive(session), this.#keepAliveMs));
      this.emit('call_started', { call_id: started.call_id, agent: started.agent, transport: session.rtc ? 'webrtc' : 'websocket' });
      this.emit('call_ready');
    } catch (error) {
      const failure = error instanceof WebCallError ? error : new WebCallError('connection_failed', errorMessage(error), { cause: error });
      const cancelled = failure.code === 'call_cancelled';
      this.#release(session);
      if (this.#session === session) {
        this.#session = null;
        this.#state = 'idle';
      }
      if (cancelled) throw failure;
      return this.#fail(failure);
    }
  }

  /**
   * Hangs up: the microphone stops at once, the server is told (`hangup`), and `call_ended`
   * follows. Resolves when the call has ended (at most ~3 s). Safe to call at any time.
   */
  stopCall(): Promise<void> {
    const session = this.#session;
    if (!session || session.ended) return Promise.resolve();
    if (this.#state === 'connecting') {
      session.settleJoin?.(new WebCallError('call_cancelled', 'stopCall() was called before the call started.'));
      session.ended = true;
      this.#release(session);
      this.#session = null;
      this.#state = 'idle';
      return Promise.resolve();
    }
    const done = new Promise<void>((resolve) => session.onEnded.push(resolve));
    if (this.#state === 'ongoing') {
      this.#state = 'ending';
      this.#stopAudio(session);
      this.#send(session, { type: 'hangup' });
      session.timers.push(setTimeout(() => this.#end(session, { call_status: null, disconnection_reason: 'user_hangup' }), 3000));
    }
    return done;
  }

  /** Sends silence instead of the microphone (the call goes on; the protocol wants continuous audio). */
  mute(): void {
    this.#muted = true;
    this.#session?.capture?.port.postMessage({ type: 'mute', muted: true } satisfies CaptureCommand);
  }

  unmute(): void {
    this.#muted = false;
    this.#session?.capture?.port.postMessage({ type: 'mute', muted: false } satisfies CaptureCommand);
  }

  /**
   * Over WebRTC: restarts ICE now, for a page that knows the network changed (the window's `online`
   * event); the SDK restarts by itself when the connection fails or stays disconnected. Resolves
   * once the call is connected again; a call over the WebSocket rejects with `invalid_argument`.
   */
  async restartIce(): Promise<void> {
    const rtc = this.#state === 'ongoing' ? this.#session?.rtc : null;
    if (!rtc) throw new WebCallError('invalid_argument', 'restartIce() is for an ongoing call over WebRTC.');
    try {
      await rtc.restartIce();
    } catch (error) {
      throw error instanceof WebCallError ? error : new WebCallError('connection_failed', error instanceof Error ? error.message : String(error), { cause: error });
    }
  }

  /** Resumes audio output where a browser blocked autoplay (call it from a click). */
  async startAudioPlayback(): Promise<void> {
    await this.#session?.context?.resume();
  }

  // --- internals ----------------------------------------------------------------------------

  #fail(error: WebCallError): never {
    this.emit('error', error);
    throw error;
  }

  #checkLive(session: Session): void {
    if (this.#session !== session || session.ended) throw new WebCallError('call_cancelled', 'stopCall() was called before the call started.');
  }

  #startPlayback(session: Session, context: AudioContext, emitSamples: boolean): void {
    const processorOptions: PlaybackOptions = { prebufferMs: this.#prebufferMs, capacityMs: 2000, emitSamples };
    const node = new AudioWorkletNode(context, PLAYBACK_PROCESSOR, {
      numberOfInputs: 0,
      numberOfOutputs: 1,
      outputChannelCount: [1],
      processorOptions,
    });
    node.port.onmessage = (event: MessageEvent<PlaybackEvent>) => {
      // Over WebRTC the agent plays from a media element: the counters come from WebRTC's statistics.
      if (this.#session !== session || session.rtc) return;
      const data = event.data;
      this.#stats.playedSamples = data.playedSamples;
      this.#stats.droppedSamples = data.droppedSamples;
      this.#stats.queuedSamples = data.queuedSamples;
      if (data.samples) this.emit('audio', data.samples);
    };
    node.connect(context.destination);
    session.playback = node;
  }

  #startCapture(session: Session, context: AudioContext): void {
    const node = new AudioWorkletNode(context, CAPTURE_PROCESSOR, {
      numberOfInputs: 1,
      numberOfOutputs: 0,
      channelCount: 1,
      channelCountMode: 'explicit',
      processorOptions: { frameSamples: WIRE_SAMPLE_RATE / 50 },
    });
    node.port.onmessage = (event: MessageEvent<CaptureEvent>) => {
      if (this.#session !== session || this.#state !== 'ongoing') return;
      const ws = session.ws;
      if (!ws || ws.readyState !== WebSocket.OPEN) return;
      // A stalled socket must not grow memory without bound: drop microphone frames past ~1 s queued.
      if (ws.bufferedAmount > WIRE_SAMPLE_RATE * 2) return;
      ws.send(event.data.pcm);
      this.#stats.sentSamples += event.data.pcm.byteLength / 2;
      this.#stats.inputLevel = event.data.level;
    };
    if (this.#muted) node.port.postMessage({ type: 'mute', muted: true } satisfies CaptureCommand);
    const source = context.createMediaStreamSource(session.stream!);
    source.connect(node);
    session.source = source;
    session.capture = node;
  }

  /**
   * Joins over WebRTC; null when WebRTC cannot carry the call and `transport` is `'auto'` (the
   * token is then still unused: the WebSocket joins with it).
   */
  async #joinRtc(session: Session, accessToken: string, transport: CallTransport, playbackDeviceId: string | undefined): Promise<CallStartedMessage | null> {
    const track = session.stream?.getAudioTracks()[0];
    if (!track) throw new WebCallError('microphone_unavailable', 'The microphone gave no audio track.');
    try {
      const { link, started } = await joinWebRtc({
        baseUrl: this.baseUrl,
        accessToken,
        track,
        connectTimeoutMs: transport === 'auto' ? this.#rtcConnectTimeoutMs : this.#joinTimeoutMs,
        joinTimeoutMs: this.#joinTimeoutMs,
        ...(playbackDeviceId ? { playbackDeviceId } : {}),
        onMessage: (message) => {
          if (this.#session !== session) return;
          session.lastHeardAt = Date.now();
          this.#dispatch(session, message);
        },
        onClosed: () => this.#onClose(session),
      });
      session.rtc = link;
      if (this.#session !== session || session.ended) link.close();
      // The counters come from WebRTC's own statistics: the agent plays from a media element.
      session.timers.push(setInterval(() => void this.#readRtcStats(session, link), 250));
      return started;
    } catch (error) {
      if (error instanceof RtcUnavailable && transport === 'auto') return null;
      if (error instanceof RtcUnavailable) throw new WebCallError('connection_failed', error.message, { cause: error });
      throw error;
    }
  }

  async #readRtcStats(session: Session, link: RtcLink): Promise<void> {
    const { samples, inputLevel } = await link.stats().catch(() => ({ samples: 0, inputLevel: 0 }));
    if (this.#session !== session) return;
    const rate = this.#stats.outputSampleRate || 48_000;
    this.#stats.receivedSamples = Math.round(samples / 3); // 48 kHz -> the 16 kHz of the wire's counters
    this.#stats.playedSamples = Math.round((samples * rate) / 48_000);
    this.#stats.inputLevel = inputLevel;
  }

  /** Opens the socket, sends `join`, and waits for `call_started` (or a refusal). */
  #join(session: Session, accessToken: string): Promise<CallStartedMessage> {
    return new Promise<CallStartedMessage>((resolve, reject) => {
      let started: CallStartedMessage | null = null;
      let settled = false;
      const timer = setTimeout(
        () => settle(new WebCallError('connection_failed', `The server did not accept the call within ${this.#joinTimeoutMs} ms.`)),
        this.#joinTimeoutMs,
      );
      const settle = (error: WebCallError | null) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        session.settleJoin = null;
        if (error) reject(error);
        else resolve(started!);
      };
      session.settleJoin = settle;

      let ws: WebSocket;
      try {
        ws = new WebSocket(webCallUrl(this.baseUrl));
      } catch (error) {
        settle(new WebCallError('connection_failed', `Cannot open the call connection: ${errorMessage(error)}`, { cause: error }));
        return;
      }
      ws.binaryType = 'arraybuffer';
      session.ws = ws;
      ws.onopen = () => {
        this.#send(session, { type: 'join', access_token: accessToken, protocol_version: PROTOCOL_VERSION, sample_rate: WIRE_SAMPLE_RATE });
      };
      ws.onmessage = (event: MessageEvent) => {
        if (this.#session !== session) return;
        session.lastHeardAt = Date.now();
        if (typeof event.data !== 'string') {
          if (this.#state === 'ongoing') this.#playAgentAudio(session, event.data as ArrayBuffer);
          return;
        }
        const message = parseServerMessage(event.data);
        if (!message) return;
        if (!settled) {
          if (message.type === 'call_started') {
            started = message;
            settle(null);
          } else if (message.type === 'error') {
            settle(new WebCallError(message.code, message.message || SERVER_ERROR_MESSAGES[message.code] || 'The server refused the call.'));
          }
          return;
        }
        this.#dispatch(session, message);
      };
      ws.onclose = (event: CloseEvent) => {
        if (!settled) {
          settle(new WebCallError('connection_failed', `The call connection closed before the call started (code ${event.code}).`));
          return;
        }
        this.#onClose(session);
      };
      // onerror is always followed by onclose, which reports.
      ws.onerror = () => undefined;
    });
  }

  #dispatch(session: Session, message: ServerMessage): void {
    switch (message.type) {
      case 'agent_start_talking':
        this.emit('agent_start_talking', { utterance_id: message.utterance_id });
        break;
      case 'agent_stop_talking':
        // The server sends `clear` on barge-in; a cut-off reply means the same, so drop here too.
        if (message.cut_off) this.#clearPlayback(session);
        this.emit('agent_stop_talking', { utterance_id: message.utterance_id, cut_off: message.cut_off });
        break;
      case 'clear':
        this.#clearPlayback(session);
        break;
      case 'update':
        this.emit('update', { transcript: message.transcript, final: message.final });
        break;
      case 'node_transition':
        this.emit('node_transition', { from: message.from, to: message.to });
        break;
      case 'metadata':
        this.emit('metadata', { metadata: message.metadata });
        break;
      case 'call_ended':
        this.#end(session, { call_status: message.call_status, disconnection_reason: message.disconnection_reason });
        break;
      case 'error':
        this.emit('error', new WebCallError(message.code, message.message || SERVER_ERROR_MESSAGES[message.code] || 'The server reported an error.'));
        break;
      case 'call_started':
      case 'pong':
        break;
    }
  }

  #playAgentAudio(session: Session, bytes: ArrayBuffer): void {
    this.#stats.receivedSamples += Math.floor(bytes.byteLength / 2);
    session.playback?.port.postMessage({ type: 'audio', pcm: bytes } satisfies PlaybackCommand, [bytes]);
  }

  #clearPlayback(session: Session): void {
    session.playback?.port.postMessage({ type: 'clear' } satisfies PlaybackCommand);
  }

  #keepAlive(session: Session): void {
    if (this.#session !== session || session.ended) return;
    if (Date.now() - session.lastHeardAt > this.#timeoutMs) {
      this.#onClose(session);
      return;
    }
    this.#send(session, { type: 'ping', id: Date.now() });
  }

  /** The socket closed (or went silent) without `call_ended`. */
  #onClose(session: Session): void {
    if (this.#session !== session || session.ended) return;
    if (this.#state === 'ending') {
      this.#end(session, { call_status: null, disconnection_reason: 'user_hangup' });
      return;
    }
    this.emit(
      'error',
      new WebCallError(
        'connection_lost',
        'The connection to the call was lost. The server ends the call (client_disconnected) within a few seconds; start a new call to continue.',
      ),
    );
    this.#end(session, { call_status: null, disconnection_reason: 'connection_lost' });
  }

  #end(session: Session, event: CallEndedEvent): void {
    if (session.ended) return;
    session.ended = true;
    this.#release(session);
    if (this.#session === session) {
      this.#session = null;
      this.#state = 'idle';
    }
    this.emit('call_ended', event);
    for (const resolve of session.onEnded.splice(0)) resolve();
  }

  #send(session: Session, message: ClientMessage): void {
    if (session.rtc) return session.rtc.send(JSON.stringify(message));
    const ws = session.ws;
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
  }

  /** Stops the microphone and agent audio (hang-up starts here, before the server confirms). */
  #stopAudio(session: Session): void {
    session.capture?.port.postMessage({ type: 'stop' } satisfies CaptureCommand);
    session.playback?.port.postMessage({ type: 'stop' } satisfies PlaybackCommand);
    session.source?.disconnect();
    session.capture?.disconnect();
    session.playback?.disconnect();
    for (const track of session.stream?.getTracks() ?? []) track.stop();
  }

  /** Releases everything the session holds; idempotent. */
  #release(session: Session): void {
    for (const timer of session.timers.splice(0)) clearInterval(timer);
    this.#stopAudio(session);
    session.source = null;
    session.capture = null;
    session.playback = null;
    session.stream = null;
    session.rtc?.close();
    session.rtc = null;
    const ws = session.ws;
    session.ws = null;
    if (ws) {
      ws.onmessage = null;
      ws.onclose = null;
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close(1000);
    }
    const context = session.context;
    session.context = null;
    if (context && context.state !== 'closed') void context.close().catch(() => undefined);
  }
}

/**
 * The microphone, echo-cancelled. Over the WebSocket the agent plays through Web Audio, which
 * Chrome's echo canceller has long ignored (crbug 687574): ask for `echoCancellation: "all"`
 * (Chrome 141+), and plain `true` where the browser refuses that value.
 */
async function openMicrophone(deviceId: string | undefined, webSocketOnly: boolean): Promise<MediaStream> {
  const audio = (echoCancellation: boolean | 'all'): MediaStreamConstraints => ({
    audio: {
      echoCancellation: echoCancellation as boolean,
      noiseSuppression: true,
      autoGainControl: true,
      channelCount: 1,
      ...(deviceId ? { deviceId: { exact: deviceId } } : {}),
    },
  });
  if (webSocketOnly) {
    try {
      return await navigator.mediaDevices.getUserMedia(audio('all'));
    } catch (error) {
      if (!(error instanceof TypeError) && (error as { name?: string }).name !== 'OverconstrainedError') throw error;
    }
  }
  return navigator.mediaDevices.getUserMedia(audio(true));
}

function emptyStats(): WebCallStats {
  return { sentSamples: 0, receivedSamples: 0, playedSamples: 0, droppedSamples: 0, queuedSamples: 0, outputSampleRate: 0, inputLevel: 0 };
}

function missingFeature(): string | null {
  if (typeof WebSocket === 'undefined') return 'This browser has no WebSocket.';
  if (typeof AudioWorkletNode === 'undefined') return 'This browser has no AudioWorklet (it also needs a secure context: https or localhost).';
  if (!globalThis.navigator?.mediaDevices?.getUserMedia) return 'This browser cannot open the microphone here (it needs a secure context: https or localhost).';
  return null;
}

async function setSink(context: AudioContext, deviceId: string): Promise<void> {
  const withSink = context as AudioContext & { setSinkId?: (id: string) => Promise<void> };
  if (typeof withSink.setSinkId === 'function') await withSink.setSinkId(deviceId);
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function isThenable(value: unknown): value is PromiseLike<string> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

function isToken(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

function invalidToken(): WebCallError {
  return new WebCallError('invalid_argument', 'startCall needs the accessToken returned by create-web-call (your backend gave none).');
}

/** The token, or the promise's token: a rejection is `access_token_failed`, no token `invalid_argument`. */
async function resolveToken(accessToken: string | PromiseLike<string>): Promise<string> {
  let token: unknown;
  try {
    token = await accessToken;
  } catch (error) {
    throw new WebCallError('access_token_failed', `Could not get an access token for the call: ${errorMessage(error)}`, { cause: error });
  }
  if (!isToken(token)) throw invalidToken();
  return token;
}
