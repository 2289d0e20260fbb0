/**
 * One WebRTC web call as a call endpoint: the caller's Opus RTP decoded to the pipeline's 16 kHz
 * (through the inbound limits), the agent's audio encoded to Opus and sent as RTP, and the session's
 * events as the media protocol's JSON messages on the "events" data channel, the same shapes as on
 * the WebSocket (docs/media-protocol.md, "WebRTC"). The signalling that made the connection is in
 * webrtc.transport.ts; nothing here is seen by the session but the port.
 */
import type { Counter } from 'prom-client';
import { type MediaStreamTrack, type RTCDataChannel, type RTCDtlsTransport, type RTCPeerConnection, RtpHeader, RtpPacket } from 'werift';
import { randomInt } from 'node:crypto';
import type { CallMedia } from '../../domain/call.ts';
import { parseBoundedJson } from '../../lib/bounded-json.ts';
import { serverMessageOf } from '../codec/media-messages.ts';
import type { CallEndpoint, CallEnding, CallEvent, EndpointSink } from '../endpoint.ts';
import type { ServerMessage } from '../../protocol/media.messages.ts';
import { InboundLimiter, MAX_TEXT_MESSAGE_BYTES } from '../codec/inbound-limits.ts';
import { FRAME_MS, FRAME_SAMPLES, OPUS_RTP_CLOCK, OpusCodec, TICKS_PER_SAMPLE } from '../../providers/audio/opus.ts';
import { PlayoutPosition, playoutDelayMs } from './playout-position.ts';
import { RtpReceiveStats } from './rtp-receive-stats.ts';
import { CATCH_UP_MS, RtpSendClock } from './rtp-send-clock.ts';
import { concatPcm } from '../../lib/pcm.ts';
import { rms } from '../../voice/frames.ts';

/** The counters of the inbound limits, shared with the WebSocket's (switchboard_media_*). */
export interface RtcInboundCounters {
  audioDroppedSeconds: Counter;
  messagesDropped: Counter<'kind'>;
  floodDisconnections: Counter;
  /** RTP packets of the caller dropped unread, by reason (`payload_type`: not the Opus the answer named). */
  rtpDropped: Counter<'reason'>;
}

/** Largest RTP payload decoded, bytes: Opus's own maximum for one packet is 1 275 per frame. */
const MAX_OPUS_PAYLOAD_BYTES = 1_500;
/** Messages held for the data channel until it opens; beyond, the oldest are dropped. */
const PENDING_MESSAGES = 64;
/** Data-channel bytes queued unsent beyond which the caller is treated as gone (it is not reading). */
const CHANNEL_HARD_LIMIT_BYTES = 1_048_576;
/**
 * Missing audio filled with silence at most, in samples (1 s): a gap in the caller's RTP timestamps
 * (lost packets, or DTX's silence) keeps the caller's timeline; a longer one is a stall, and the
 * pipeline places what follows by the call's clock.
 */
const MAX_GAP_FILL_SAMPLES = 16_000;
/**
 * A caller quiet (QUIET_FRAMES_BEFORE_DTX) and then silent on the wire this long (Opus DTX: after
 * its frames of silence the sender sends nothing, or a refresh every 400 ms, until speech resumes)
 * is heard as silence from then on, in real time, ms: the pipeline's end of turn counts that
 * silence as it comes instead of waiting for the next packet to fill the gap (up to 400 ms later
 * with DTX). Longer than a frame and the jitter of a clean network (40 ms in the loss bench).
 */
const DTX_SILENCE_AFTER_MS = 80;
/** A decoded frame this quiet or quieter (RMS of PCM16) may be followed by DTX's silence; speech is louder. */
const QUIET_RMS = 200;
/**
 * Quiet frames in a row before a silence on the wire is taken for DTX: libopus enters DTX only
 * after 10 (200 ms), and a pause between words is shorter, so a loss or a late packet inside an
 * utterance is never filled with silence (it waits for the next packet's repair).
 */
const QUIET_FRAMES_BEFORE_DTX = 5;
/**
 * After the last message (`call_ended`, or a refusal) has gone on the data channel, how long the
 * caller has to close first, ms: the SDK and the Node client close on `call_ended`. Closing the
 * peer connection aborts the SCTP association (werift sends ABORT), which drops whatever it has
 * not delivered, so the server closes only once the message has long been on the wire.
 */
const CLOSE_GRACE_MS = 2_000;
/** The last message could not go out (the data channel never opened): the connection closes after this anyway, ms. */
const CLOSE_UNSENT_MS = 5_000;
/**
 * How far the session sends the agent's audio ahead of real time, ms: one 20 ms frame and a pacing
 * tick's slack. The caller's jitter buffer absorbs the timing (the WebSocket needs 80 ms for the
 * client's own buffer), and every ms sent ahead is a ms the caller still hears after a barge-in:
 * sent RTP cannot be recalled.
 */
const OUTPUT_LEAD_MS = 40;
/** A connection `disconnected` this long (consent freshness lost, RFC 7675) is a lost caller, unless it restarts ICE, ms. */
const DISCONNECTED_LOST_MS = 5_000;
/** An ICE restart whose new path has not connected after this long is a lost caller, ms. */
const RESTART_LOST_MS = 10_000;

export interface WebRtcEndpointOptions {
  counters: RtcInboundCounters;
  /** Monotonic ms: the inbound limits and the jitter's arrival times. */
  now: () => number;
  /** The caller's SDP asked for DTX (`usedtx=1`): our encoder may then skip silence too. */
  dtx: boolean;
}

export class WebRtcEndpoint implements CallEndpoint {
  readonly transport = 'webrtc';
  /** Wideband: the call runs at 16 kHz. */
  readonly sampleRate = 16_000;
  readonly outputLeadMs = OUTPUT_LEAD_MS;
  /** The caller's audio is placed by its RTP timestamps, gaps filled up to MAX_GAP_FILL_SAMPLES: later than that is a gap for the pipeline to skip. */
  readonly maxInputLagMs = (MAX_GAP_FILL_SAMPLES * 1000) / 16_000;
  readonly #pc: RTCPeerConnection;
  readonly #track: MediaStreamTrack;
  readonly #channel: RTCDataChannel;
  readonly #options: WebRtcEndpointOptions;
  readonly #codec: OpusCodec;
  readonly #stats = new RtpReceiveStats(OPUS_RTP_CLOCK);
  readonly #pending: string[] = [];
  readonly #out = { packets: 0, bytes: 0, sequence: randomInt(0, 65_536), ssrc: randomInt(1, 2 ** 32) };
  /** Our RTP timestamps and marker bits: a talk spurt's first packet is stamped by the clock, less a catch-up after a long pause (rtp-send-clock.ts). */
  readonly #clock = new RtpSendClock(OPUS_RTP_CLOCK, FRAME_MS, randomInt(0, 2 ** 32), OUTPUT_LEAD_MS, CATCH_UP_MS);
  /** The next RTP timestamp expected from the caller (fills gaps with silence), or null before the first. */
  #nextTimestamp: number | null = null;
  /** Armed after each quiet frame: the caller's DTX silence, fed in real time (#fillSilence); `filling` once it has begun. */
  #quietTimer: NodeJS.Timeout | undefined;
  #filling = false;
  /** When the last packet arrived (monotonic ms), quiet frames in a row up to it, and the samples of silence fed since. */
  #quietAt = 0;
  #quietFrames = 0;
  #silenceFed = 0;
  #sink: EndpointSink | undefined;
  /** Opus's payload type as the answer gave it (the offerer's number), once negotiated. */
  #payloadType: number | undefined;
  #limits: InboundLimiter;
  #closed = false;
  #flooding = false;
  /** The next frame starts a talk spurt (RTP marker bit, RFC 7587). */
  #spurt = true;
  /** The utterance the agent is speaking (the `clear` message names it). */
  #utteranceId = 'utt_0';
  #disconnectedTimer: NodeJS.Timeout | undefined;
  /** An ICE restart answered, waiting for its new path to connect. */
  #restartTimer: NodeJS.Timeout | undefined;
  /** The close after the last message (end or refusal), once scheduled, and whether that message has gone out. */
  #closing: NodeJS.Timeout | undefined;
  #lastSent = false;
  /** What the caller has heard of the current reply (playedMs), from when its frames were sent. */
  readonly #position = new PlayoutPosition();
  /** The interarrival jitter of our stream as the caller's last receiver report gave it, ms; null before one. */
  #reportedJitterMs: number | null = null;
  /** Set by the transport: forgets the session once the endpoint has closed. */
  onClosed: (() => void) | undefined;

  constructor(pc: RTCPeerConnection, track: MediaStreamTrack, channel: RTCDataChannel, options: WebRtcEndpointOptions) {
    this.#pc = pc;
    this.#track = track;
    this.#channel = channel;
    this.#options = options;
    this.#codec = new OpusCodec({ dtx: options.dtx });
    this.#limits = new InboundLimiter(options.now);
    channel.stateChanged.subscribe((state) => {
      if (state === 'open') this.#flush();
    });
    channel.onMessage.subscribe((data) => this.#onMessage(data));
    pc.connectionStateChange.subscribe((state) => {
      clearTimeout(this.#disconnectedTimer);
      if (state === 'connected') clearTimeout(this.#restartTimer);
      if (state === 'failed' || state === 'closed') this.#gone();
      // Consent freshness lost: the network may come back or the caller restart ICE, else the caller is gone.
      else if (state === 'disconnected') this.#disconnectedTimer = setTimeout(() => this.#gone(), DISCONNECTED_LOST_MS).unref();
    });
  }

  /**
   * The answer is made: Opus's payload type in it, and the connection's DTLS transport, whose RTP
   * of any other type werift drops before the track sees it. Those are counted here (a caller
   * sending the wrong type is heard as silence, and the count says why); they are not the call's
   * media, so `packets_in` and the loss leave them out.
   */
  negotiated(payloadType: number, dtls: RTCDtlsTransport): void {
    this.#payloadType = payloadType;
    dtls.onRtp.subscribe((rtp) => {
      if (!this.#closed && rtp.header.payloadType !== payloadType) this.#options.counters.rtpDropped.inc({ reason: 'payload_type' });
    });
  }

  /** The caller's audio track arrived (the remote side of the audio transceiver). */
  receive(remote: MediaStreamTrack): void {
    remote.onReceiveRtp.subscribe((rtp) => this.#onRtp(rtp));
  }

  attach(sink: EndpointSink): void {
    this.#sink = sink;
    if (this.#closed) sink.lost();
  }

  #onRtp(rtp: RtpPacket): void {
    // Only the negotiated Opus is the call's (werift already drops other types; `negotiated` counts them).
    if (this.#closed || rtp.header.payloadType !== this.#payloadType) return;
    const payload = rtp.payload;
    // Counted from the first packet (the call's media is the connection's), decoded once the call runs.
    const missing = this.#stats.record(rtp.header.sequenceNumber, rtp.header.timestamp, payload.byteLength, this.#options.now());
    const sink = this.#sink;
    if (!sink || this.#flooding) return; // before the join: media is not the call's yet
    if (missing < 0 || payload.byteLength === 0 || payload.byteLength > MAX_OPUS_PAYLOAD_BYTES) return; // late, duplicate, or not audio
    // What never came is filled so the caller's timeline holds: lost packets (a gap in the
    // sequence) are repaired, the last one from this packet's in-band FEC copy and any before it
    // by the decoder's concealment; DTX's pause (no gap in the sequence) is silence. Repairs come
    // first: the decoder must see the audio in order.
    const gap = this.#nextTimestamp === null ? 0 : Math.round(((rtp.header.timestamp - this.#nextTimestamp + 2 ** 32) % 2 ** 32) / TICKS_PER_SAMPLE);
    const fill = gap > 0 && gap <= MAX_GAP_FILL_SAMPLES ? gap : 0;
    let repaired: Int16Array | null = null;
    if (fill > 0 && missing > 0) {
      const fecSamples = Math.min(fill, FRAME_SAMPLES);
      const recovered = this.#codec.recover(payload, fecSamples) ?? new Int16Array(fecSamples);
      repaired = fill > fecSamples ? concatPcm([this.#codec.conceal(fill - fecSamples), recovered]) : recovered;
    }
    const pcm = this.#codec.decode(payload);
    if (!pcm) return;
    this.#nextTimestamp = (rtp.header.timestamp + pcm.length * TICKS_PER_SAMPLE) % 2 ** 32;
    const before = repaired ?? (fill > 0 ? new Int16Array(fill) : null);
    this.#deliver(sink, before ? concatPcm([before, pcm]) : pcm);
    this.#watchSilence(pcm);
  }

  /** The caller's audio to the call, through the inbound limits. */
  #deliver(sink: EndpointSink, audio: Int16Array): void {
    const verdict = this.#limits.audio(audio.length);
    if (verdict.kind === 'flood') return this.#cutOff(sink);
    const counters = this.#options.counters;
    if (verdict.droppedSamples > 0) counters.audioDroppedSeconds.inc(verdict.droppedSamples / 16_000);
    if (verdict.messageDropped) counters.messagesDropped.inc({ kind: 'audio' });
    if (verdict.samples > 0) sink.audio(audio.subarray(audio.length - verdict.samples));
  }

  /**
   * After QUIET_FRAMES_BEFORE_DTX quiet frames, silence on the wire is DTX (or a quiet caller's
   * lost packets): from DTX_SILENCE_AFTER_MS without a packet, silence is fed at real time until a
   * packet comes (which fills only what is still missing before it) or MAX_GAP_FILL_SAMPLES have
   * been fed.
   */
  #watchSilence(pcm: Int16Array): void {
    this.#quietAt = this.#options.now();
    this.#silenceFed = 0;
    this.#quietFrames = rms(pcm) > QUIET_RMS ? 0 : this.#quietFrames + 1;
    if (this.#quietFrames < QUIET_FRAMES_BEFORE_DTX) {
      clearTimeout(this.#quietTimer);
      this.#quietTimer = undefined;
    } else if (this.#quietTimer && !this.#filling) {
      this.#quietTimer.refresh(); // 50 times a second in a quiet stretch: no new timer each time
    } else {
      clearTimeout(this.#quietTimer);
      this.#quietTimer = setTimeout(() => this.#fillSoon(), DTX_SILENCE_AFTER_MS).unref();
    }
    this.#filling = false;
  }

  /**
   * The timer is due: the fill waits for the socket reads pending (after a stall of the event
   * loop Node runs due timers before it reads sockets, and the caller's packets may be waiting
   * there). A packet read meanwhile has re-armed the wait (#quietAt moved): nothing is filled.
   */
  #fillSoon(): void {
    const quietAt = this.#quietAt;
    setImmediate(() => {
      if (this.#quietAt === quietAt) this.#fillSilence();
    });
  }

  /** Feeds the silence due since the last quiet packet arrived (its audio ended then), then again a frame later. */
  #fillSilence(): void {
    const sink = this.#sink;
    this.#filling = true;
    if (this.#closed || this.#flooding || !sink || this.#nextTimestamp === null) return;
    const due = Math.min(MAX_GAP_FILL_SAMPLES, Math.floor((this.#options.now() - this.#quietAt) / FRAME_MS) * FRAME_SAMPLES) - this.#silenceFed;
    if (due > 0) {
      this.#silenceFed += due;
      this.#nextTimestamp = (this.#nextTimestamp + due * TICKS_PER_SAMPLE) % 2 ** 32;
      this.#deliver(sink, new Int16Array(due));
    }
    if (this.#silenceFed < MAX_GAP_FILL_SAMPLES) this.#quietTimer = setTimeout(() => this.#fillSoon(), FRAME_MS).unref();
    else this.#quietTimer = undefined;
  }

  #onMessage(data: string | Buffer): void {
    const sink = this.#sink;
    if (!sink || this.#closed || this.#flooding) return;
    const verdict = this.#limits.text();
    if (verdict === 'flood') return this.#cutOff(sink);
    if (verdict === 'drop') {
      this.#options.counters.messagesDropped.inc({ kind: 'text' });
      return;
    }
    const text = typeof data === 'string' ? data : data.toString('utf8');
    const parsed = text.length > MAX_TEXT_MESSAGE_BYTES ? null : parseBoundedJson(text);
    const value = parsed?.ok ? (parsed.value as { type?: unknown; id?: unknown } | null) : null;
    if (value === null || typeof value !== 'object' || typeof value.type !== 'string') {
      this.#send({ type: 'error', code: 'bad_message', message: 'Malformed message; see docs/media-protocol.md.' });
    } else if (value.type === 'hangup') {
      sink.hangup();
    } else if (value.type === 'ping') {
      this.#send({ type: 'pong', id: value.id ?? null });
    }
    // Unknown types are ignored (forward compatibility), as on the WebSocket.
  }

  /** Far faster than real time: stop reading, and let the session end the call (error_client_flood). */
  #cutOff(sink: EndpointSink): void {
    this.#flooding = true;
    this.#options.counters.floodDisconnections.inc();
    sink.flood();
  }

  send(event: CallEvent): void {
    if (event.type === 'agent_talking') {
      this.#spurt = true;
      this.#utteranceId = event.utteranceId;
      this.#position.reset();
    }
    this.#send(serverMessageOf(event, this.transport));
  }

  /** One frame of the agent's audio (the session paces it at real time): one Opus RTP packet per 20 ms. */
  playAudio(pcm: Int16Array): void {
    const payloadType = this.#payloadType;
    if (this.#closed || payloadType === undefined) return;
    const delayMs = playoutDelayMs(this.#reportedJitterMs);
    for (let at = 0; at < pcm.length; at += FRAME_SAMPLES) {
      const payload = this.#codec.encode(pcm.subarray(at, at + FRAME_SAMPLES));
      const out = this.#out;
      const { timestamp, marker } = this.#clock.stamp(this.#options.now(), this.#spurt);
      const header = new RtpHeader({ payloadType, sequenceNumber: out.sequence, timestamp, ssrc: out.ssrc, marker });
      this.#spurt = false;
      out.sequence = (out.sequence + 1) % 65_536;
      out.packets += 1;
      out.bytes += payload.byteLength;
      this.#track.writeRtp(new RtpPacket(header, payload));
      this.#position.sent(this.#options.now(), FRAME_MS, delayMs); // a short frame is padded to 20 ms
    }
  }

  /**
   * Ms of the current reply the caller has heard: each frame counts once the caller's jitter buffer
   * has played it, estimated from when it was sent and the caller's reported jitter (playout-position.ts).
   */
  playedMs(): number {
    return this.#position.heardMs(this.#options.now());
  }

  /** The caller's receiver report on our stream (RTCP RR, or SR's report blocks): its interarrival jitter in RTP ticks. */
  receiverReport(jitterTicks: number): void {
    this.#reportedJitterMs = (jitterTicks * 1_000) / OPUS_RTP_CLOCK;
  }

  /**
   * Barge-in: nothing is queued here (the werift sender writes each frame as the session paces it,
   * at most OUTPUT_LEAD_MS ahead of real time), so what the caller still hears is that lead and its
   * jitter buffer (docs/media-protocol.md, "WebRTC"); the page is told, as on the WebSocket.
   */
  clear(): void {
    this.#spurt = true;
    this.#send({ type: 'clear', utterance_id: this.#utteranceId });
  }

  /** Opus over RTP: packets and payload bytes both ways, and loss and jitter of the caller's stream (RFC 3550). */
  mediaStats(): CallMedia {
    const s = this.#stats;
    return {
      transport: this.transport,
      codec: 'opus',
      sample_rate: OPUS_RTP_CLOCK,
      bytes_in: s.bytes,
      bytes_out: this.#out.bytes,
      packets_in: s.packets,
      packets_out: this.#out.packets,
      packets_lost: s.lost,
      jitter_ms: Math.round(s.jitterMs * 10) / 10,
    };
  }

  /**
   * The caller restarted ICE (its network changed; the transport answered its new offer): the call
   * waits for the new path, RESTART_LOST_MS at most, whatever state the old one was in.
   */
  restarting(): void {
    if (this.#closed) return;
    clearTimeout(this.#disconnectedTimer);
    clearTimeout(this.#restartTimer);
    this.#restartTimer = setTimeout(() => this.#gone(), RESTART_LOST_MS).unref();
  }

  /** The restarted ICE nominated a pair: the call is on its new path. */
  restarted(): void {
    clearTimeout(this.#restartTimer);
  }

  /** The caller hung up through signalling (DELETE on its session): as the data channel's `hangup`. */
  hangup(): void {
    if (!this.#closed) this.#sink?.hangup();
  }

  /** A refusal after the offer was answered (the token was used meanwhile): the `error` message, then the connection closes. */
  refuse(code: string, message: string): void {
    this.#send({ type: 'error', code, message });
    this.#closeSoon();
  }

  /** `call_ended` on the data channel, then the peer connection closes. */
  end(ending: CallEnding): void {
    this.#send({ type: 'call_ended', call_status: ending.status, disconnection_reason: ending.reason });
    this.#closeSoon();
  }

  /** Closes at once (the transport's shutdown, or a session that never connected). Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#disconnectedTimer);
    clearTimeout(this.#restartTimer);
    clearTimeout(this.#closing);
    clearTimeout(this.#quietTimer);
    this.#pending.length = 0;
    this.#codec.close();
    void this.#pc.close().catch(() => {});
    this.onClosed?.();
  }

  /** Closes CLOSE_GRACE_MS after the last message went on the data channel (at once if it is open), or after CLOSE_UNSENT_MS. */
  #closeSoon(): void {
    if (this.#closing) return;
    this.#closing = setTimeout(() => this.close(), CLOSE_UNSENT_MS).unref();
    if (this.#channel.readyState === 'open') this.#closeAfterSent();
  }

  #closeAfterSent(): void {
    if (this.#lastSent) return;
    this.#lastSent = true;
    clearTimeout(this.#closing);
    this.#closing = setTimeout(() => this.close(), CLOSE_GRACE_MS).unref();
  }

  /** The connection failed or closed: the caller hung up (after `hangup` the sink ignores this) or was lost. */
  #gone(): void {
    if (this.#closed) return;
    this.#sink?.lost();
    this.close();
  }

  #send(message: ServerMessage): void {
    if (this.#closed) return;
    this.#pending.push(JSON.stringify(message));
    while (this.#pending.length > PENDING_MESSAGES) this.#pending.shift();
    if (this.#channel.readyState === 'open') this.#flush();
  }

  #flush(): void {
    if (this.#channel.bufferedAmount > CHANNEL_HARD_LIMIT_BYTES) return this.#gone();
    for (const text of this.#pending.splice(0)) this.#channel.send(text);
    // The end's message is out now: the grace before the close counts from here, not from the end.
    if (this.#closing) this.#closeAfterSent();
  }
}
