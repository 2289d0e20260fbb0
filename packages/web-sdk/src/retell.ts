/**
 * `RetellWebClient`: the shape of Retell's browser client (retell-client-js-sdk) over this SDK's
 * WebCallClient, so that a page written for Retell changes only its import and the server's base
 * URL (docs/browser-sdk.md, "Pages written for Retell").
 *
 * ```ts
 * import { RetellWebClient } from '@switchboard/web-sdk';
 * const client = new RetellWebClient({ baseUrl: 'https://voice.example.com' });
 * client.on('update', (update) => render(update.transcript));
 * await client.startCall({ accessToken }); // create-web-call's access_token, from your backend
 * ```
 */
import { WebCallClient, type CallTransport } from './client.ts';
import { TypedEmitter } from './emitter.ts';
import type { TranscriptEntry } from './protocol.ts';

export interface RetellWebClientOptions {
  /** The Switchboard server, e.g. `https://voice.example.com` (default: the page's origin). Retell's client has no such option: its host is fixed. */
  baseUrl?: string;
}

/** Retell's `startCall` options. */
export interface RetellStartCallConfig {
  /** The `access_token` of create-web-call. */
  accessToken: string;
  /** Sample rate of the AudioContext in Hz (default: the device's). */
  sampleRate?: number;
  /** `deviceId` of the microphone. */
  captureDeviceId?: string;
  /** `deviceId` of the speaker (where `AudioContext.setSinkId` exists). */
  playbackDeviceId?: string;
  /** Emit `audio` events with the agent's samples as they play (WebSocket calls only). */
  emitRawAudioSamples?: boolean;
  /** Not Retell's: how the call is carried (default `auto`: WebRTC, falling back to the WebSocket). */
  transport?: CallTransport;
}

/** Retell's `update` event: the live transcript (the last utterances, the last one possibly still changing). */
export interface RetellUpdateEvent {
  event_type: 'update';
  transcript: TranscriptEntry[];
}

/** Retell's `metadata` event: what a custom LLM's server sent for the page. */
export interface RetellMetadataEvent {
  event_type: 'metadata';
  metadata: unknown;
}

/** The events of Retell's client, with Retell's payloads. */
export interface RetellWebClientEvents {
  call_started: () => void;
  /** Audio flows both ways. */
  call_ready: () => void;
  call_ended: () => void;
  agent_start_talking: () => void;
  agent_stop_talking: () => void;
  update: (update: RetellUpdateEvent) => void;
  metadata: (event: RetellMetadataEvent) => void;
  /** A conversation-flow agent moved between nodes. */
  node_transition: (event: { former_node_id: string | null; new_node_id: string }) => void;
  /** The agent's samples as played (with `emitRawAudioSamples`). */
  audio: (samples: Float32Array) => void;
  /** What failed, as a message (Retell's client emits a string); the code is in the message's prefix. */
  error: (error: string) => void;
}

/** Retell's browser client, over WebCallClient. */
export class RetellWebClient extends TypedEmitter<RetellWebClientEvents> {
  /** The client underneath, for what Retell's has not (`stats`, `state`, `callId`). */
  readonly client: WebCallClient;

  constructor(options: RetellWebClientOptions = {}) {
    super();
    this.client = new WebCallClient(options.baseUrl === undefined ? {} : { baseUrl: options.baseUrl });
    const c = this.client;
    c.on('call_started', () => this.emit('call_started'));
    c.on('call_ready', () => this.emit('call_ready'));
    c.on('call_ended', () => this.emit('call_ended'));
    c.on('agent_start_talking', () => this.emit('agent_start_talking'));
    c.on('agent_stop_talking', () => this.emit('agent_stop_talking'));
    c.on('update', ({ transcript }) => this.emit('update', { event_type: 'update', transcript }));
    c.on('metadata', ({ metadata }) => this.emit('metadata', { event_type: 'metadata', metadata }));
    c.on('node_transition', ({ from, to }) => this.emit('node_transition', { former_node_id: from, new_node_id: to }));
    c.on('audio', (samples) => this.emit('audio', samples));
    c.on('error', (error) => this.emit('error', `${error.code}: ${error.message}`));
  }

  /** Whether the microphone is muted. */
  get isMuted(): boolean {
    return this.client.isMuted;
  }

  /** Opens the microphone and joins the call; resolves once it has started (a failure is also emitted as `error`). */
  async startCall(config: RetellStartCallConfig): Promise<void> {
    await this.client.startCall({
      accessToken: config.accessToken,
      ...(config.sampleRate !== undefined ? { sampleRate: config.sampleRate } : {}),
      ...(config.captureDeviceId !== undefined ? { captureDeviceId: config.captureDeviceId } : {}),
      ...(config.playbackDeviceId !== undefined ? { playbackDeviceId: config.playbackDeviceId } : {}),
      ...(config.emitRawAudioSamples !== undefined ? { emitRawAudioSamples: config.emitRawAudioSamples } : {}),
      ...(config.transport !== undefined ? { transport: config.transport } : {}),
    });
  }

  /** Hangs up (Retell's returns nothing; `call_ended` follows). */
  stopCall(): void {
    void this.client.stopCall().catch(() => undefined);
  }

  /** Resumes audio playback where the browser blocked it (call it from a user gesture). */
  startAudioPlayback(): Promise<void> {
    return this.client.startAudioPlayback();
  }

  mute(): void {
    this.client.mute();
  }

  unmute(): void {
    this.client.unmute();
  }
}
