/**
 * A phone call over the SIP endpoint, as a call session sees it: RTP audio decoded and encoded at
 * the codec's own rate, which is the port's and the call's (G.711 at 8 kHz, never resampled: the
 * call runs at the telephone band end to end; Opus decoded to and encoded from 16 kHz), keypad
 * digits (RFC 4733) to the sink and from the agent (press_digit), a transfer by
 * REFER and the end of the call handed back to its dialog (a BYE, unless the caller hung up first).
 */
import type dgram from 'node:dgram';
import type { CallMedia } from '../../domain/call.ts';
import type { CallEndpoint, CallEnding, CallEvent, EndpointSink } from '../endpoint.ts';
import { type RtpDropReason, RtpSession } from './rtp.ts';
import { type RtpMedia, createRtpCodec } from './rtp-codec.ts';

/**
 * A call's endpoint on its bound RTP socket, the codec negotiated, the far end at `remote`. Nothing
 * in it waits any more (G.711 is no longer resampled); it stays a promise for the dialogs that await it.
 */
export function openSipEndpoint(options: {
  socket: dgram.Socket;
  media: RtpMedia;
  remote: { address: string; port: number };
  onEnd: (ending: CallEnding) => void;
  transfer: (destination: string) => Promise<void>;
  /** Told of each RTP packet dropped unread (the transport's switchboard_sip_rtp_dropped_total). */
  rtpDropped: (reason: RtpDropReason) => void;
}): Promise<SipCallEndpoint> {
  const { media } = options;
  const codec = createRtpCodec(media);
  const rtp = new RtpSession({ socket: options.socket, codec, payloadType: media.payloadType, eventPayloadType: media.eventPayloadType, eventClockRate: media.eventClockRate, remote: options.remote, ptimeMs: media.ptimeMs, dropped: options.rtpDropped });
  return Promise.resolve(new SipCallEndpoint({ rtp, onEnd: options.onEnd, transfer: options.transfer }));
}

/**
 * What a phone holds in its jitter buffer, ms, played after the last packet has arrived: adaptive
 * buffers keep 20-100 ms; a BYE before it has played cuts the agent's last syllable.
 */
export const PHONE_PLAYOUT_MS = 60;

export class SipCallEndpoint implements CallEndpoint {
  readonly transport = 'sip';
  /** The codec's audio rate (G.711: 8 kHz; Opus: 16 kHz): the call's pipeline runs at it. */
  readonly sampleRate: 8000 | 16000;
  /** A phone: the BYE goes once the media stops, not after the analysis. */
  readonly endsWithMedia = true;
  readonly farEndPlayoutMs = PHONE_PLAYOUT_MS;
  readonly #rtp: RtpSession;
  readonly #onEnd: (ending: CallEnding) => void;
  readonly #transfer: (destination: string) => Promise<void>;
  #ended = false;
  #sink: EndpointSink | null = null;

  constructor(options: { rtp: RtpSession; onEnd: (ending: CallEnding) => void; transfer: (destination: string) => Promise<void> }) {
    this.#transfer = options.transfer;
    this.#rtp = options.rtp;
    this.sampleRate = options.rtp.codec.sampleRate;
    this.#onEnd = options.onEnd;
  }

  /** The caller's BYE ended the call. */
  remoteHangup(): void {
    this.#sink?.hangup();
  }

  /** The caller never confirmed the answer (no ACK), or cannot be reached. */
  remoteLost(): void {
    this.#sink?.lost();
  }

  attach(sink: EndpointSink): void {
    this.#sink = sink;
    this.#rtp.start({
      audio: (pcm) => {
        if (!this.#ended) sink.audio(pcm);
      },
      dtmf: (digit) => {
        if (!this.#ended) sink.dtmf?.(digit);
      },
    });
  }

  send(event: CallEvent): void {
    if (event.type === 'agent_talking') this.#rtp.markTalkspurt();
  }

  playAudio(pcm: Int16Array): void {
    if (!this.#ended) this.#rtp.send(pcm);
  }

  clear(): void {
    // Audio is sent as the session paces it: nothing is queued here but a part of one packet.
    this.#rtp.markTalkspurt();
  }

  /** Keys pressed by the agent: RFC 4733 telephone events on the call's RTP. */
  sendDigits(digits: string): Promise<void> {
    if (this.#ended) return Promise.reject(new Error('the call is over'));
    return this.#rtp.sendDigits(digits);
  }

  /** A cold transfer by REFER (RFC 3515), through the call's dialog. */
  transfer(destination: string): Promise<void> {
    return this.#transfer(destination);
  }

  mediaStats(): CallMedia {
    const s = this.#rtp.stats();
    return {
      transport: 'sip',
      codec: this.#rtp.codec.name,
      // The wire's rate: the RTP clock (Opus's is 48 kHz whatever the audio's bandwidth, RFC 7587).
      sample_rate: this.#rtp.codec.clockRate,
      bytes_in: s.bytesIn,
      bytes_out: s.bytesOut,
      packets_in: s.packetsIn,
      packets_out: s.packetsOut,
      packets_lost: s.packetsLost,
      jitter_ms: s.jitterMs,
    };
  }

  /**
   * Lets the RTP socket go to another endpoint, closing the rest without ending the call: the
   * early media's endpoint when the answer names other media.
   */
  release(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#rtp.detach();
  }

  end(ending: CallEnding): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#rtp.close();
    this.#onEnd(ending);
  }
}
