/**
 * A phone call over the SIP endpoint, as a call session sees it: RTP audio converted between the
 * wire's 8 kHz G.711 and the port's 16 kHz, keypad digits (RFC 4733) to the sink and from the
 * agent (press_digit), a transfer by
 * REFER and the end of the call handed back to its dialog (a BYE, unless the caller hung up first).
 */
import type { CallMedia } from '../../domain/call.ts';
import type { Resampler } from '../../providers/audio/resample.ts';
import type { CallEndpoint, CallEnding, CallEvent, EndpointSink } from '../endpoint.ts';
import type { RtpSession } from './rtp.ts';

export class SipCallEndpoint implements CallEndpoint {
  readonly transport = 'sip';
  readonly #rtp: RtpSession;
  readonly #up: Resampler;
  readonly #down: Resampler;
  readonly #onEnd: (ending: CallEnding) => void;
  readonly #transfer: (destination: string) => Promise<void>;
  #ended = false;
  #sink: EndpointSink | null = null;

  constructor(options: { rtp: RtpSession; upsampler: Resampler; downsampler: Resampler; onEnd: (ending: CallEnding) => void; transfer: (destination: string) => Promise<void> }) {
    this.#transfer = options.transfer;
    this.#rtp = options.rtp;
    this.#up = options.upsampler;
    this.#down = options.downsampler;
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
      audio: (pcm8k) => {
        if (!this.#ended) sink.audio(this.#up.process(pcm8k));
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
    if (!this.#ended) this.#rtp.send(this.#down.process(pcm));
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
      codec: this.#rtp.codec,
      sample_rate: 8000,
      bytes_in: s.bytesIn,
      bytes_out: s.bytesOut,
      packets_in: s.packetsIn,
      packets_out: s.packetsOut,
      packets_lost: s.packetsLost,
      jitter_ms: s.jitterMs,
    };
  }

  end(ending: CallEnding): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#rtp.close();
    this.#up.close();
    this.#down.close();
    this.#onEnd(ending);
  }
}
