/**
 * RTP (RFC 3550) for one call: a UDP socket on an even port, the negotiated codec both ways
 * (./rtp-codec.ts: G.711 at 8 kHz, or Opus on its 48 kHz clock, lost Opus packets repaired), RFC
 * 4733 telephone events both ways (keys the caller presses in; keys the agent presses out), and the
 * statistics the call object reports (packets, loss by sequence gaps, the interarrival jitter of
 * 6.4.1). Packets from any address but the negotiated one are dropped, and so are the negotiated
 * address's packets beyond the call's inbound limits (rtpLimits). We send packets of the length
 * the far end asked for (./sdp.ts sendPtimeMs) and take packets of any length.
 */
import dgram from 'node:dgram';
import { INBOUND_LIMITS, InboundLimiter, type InboundLimitRates } from '../codec/inbound-limits.ts';
import { KEY_GAP_MS, KEY_TONE_MS, KEYPAD_KEYS, keyCode } from '../codec/keypad.ts';
import { MAX_REPAIR_SAMPLES, type RtpCodec } from './rtp-codec.ts';

const RTP_HEADER_BYTES = 12;
/** Largest RTP packet read (a 20 ms G.711 packet is 172 bytes; Opus's largest frame is 1 275). */
const MAX_RTP_BYTES = 1_500;
/** The volume field of our events: -10 dBm0 (RFC 4733 2.3.4, a DTMF generator's usual level). */
const KEY_VOLUME = 10;
/** The end of an event is sent three times (RFC 4733 2.5.1.4: it may be lost). */
const END_PACKETS = 3;

/**
 * What one call's RTP may bring, through the limiter every call connection has
 * (../codec/inbound-limits.ts): audio at real time with a second's burst (the codec's samples),
 * and 150 packets a second, burst 150 (10 ms packets beside a key's events at 20 ms). Beyond
 * these a packet is dropped before it is decoded, and counted; unlike a WebSocket's, the call is
 * not cut off past the flood rate: over UDP anyone can send from a forged address, and an
 * attacker who could end calls that way would.
 */
export function rtpLimits(sampleRate: number): InboundLimitRates {
  return { audioSamples: { perSecond: sampleRate, burst: sampleRate }, messages: { perSecond: 150, burst: 150 }, textMessages: INBOUND_LIMITS.textMessages };
}

/** Why a packet was dropped unread: another source than the negotiated one, or over the call's limits. */
export type RtpDropReason = 'stray_source' | 'rate';

export interface RtpHandlers {
  /** Decoded audio of one packet (and any repair of what was lost before it), at the codec's `sampleRate`. */
  audio(pcm: Int16Array): void;
  /** One keypad digit, once per event. */
  dtmf(digit: string): void;
}

export interface RtpStats {
  packetsIn: number;
  packetsOut: number;
  bytesIn: number;
  bytesOut: number;
  packetsLost: number;
  jitterMs: number | null;
  /** Packets dropped because they came from another address than the negotiated one. */
  strayPackets: number;
  /** Packets of the negotiated address dropped over the call's limits (rtpLimits). */
  limitedPackets: number;
}

/** Binds an even port in [min, max] on `host`; tries ports in order from a random start. */
export async function bindRtpSocket(host: string, min: number, max: number): Promise<dgram.Socket> {
  const count = Math.floor((max - min) / 2) + 1;
  const first = Math.floor(Math.random() * count);
  for (let i = 0; i < Math.min(count, 64); i++) {
    const port = min + ((first + i) % count) * 2;
    const socket = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
    const bound = await new Promise<boolean>((resolve) => {
      socket.once('error', () => resolve(false));
      socket.bind(port, host, () => resolve(true));
    });
    if (bound) return socket;
    socket.close();
  }
  throw new Error('no free RTP port in the configured range');
}

export class RtpSession {
  readonly #socket: dgram.Socket;
  readonly #codec: RtpCodec;
  readonly #payloadType: number;
  readonly #eventPayloadType: number | null;
  readonly #eventClockRate: number;
  readonly #remote: { address: string; port: number };
  /** Samples of one packet we send (its `ptimeMs`). */
  readonly #packetSamples: number;
  readonly #limits: InboundLimiter;
  readonly #dropped: (reason: RtpDropReason) => void;
  #handlers: RtpHandlers | null = null;
  readonly #stats: RtpStats = { packetsIn: 0, packetsOut: 0, bytesIn: 0, bytesOut: 0, packetsLost: 0, jitterMs: null, strayPackets: 0, limitedPackets: 0 };
  // Outgoing stream.
  readonly #ssrc = (Math.random() * 0xffffffff) >>> 0;
  #seq = Math.floor(Math.random() * 0xffff);
  #timestamp = (Math.random() * 0xffffffff) >>> 0;
  #pending = new Int16Array(0);
  #marker = true;
  // Incoming stream.
  #expectedNext: number | null = null;
  #lastTransit: number | null = null;
  /** The timestamp the caller's next audio packet should carry: a jump beyond it after a loss is repaired. */
  #nextTimestamp: number | null = null;
  /**
   * Samples the repairs may still add: what was decoded, less what was repaired. A peer's gaps
   * (its sequence and timestamps are its to write) can so at most double the audio it sends.
   */
  #repairBudget = 0;
  #jitter = 0;
  #lastEventTimestamp: number | null = null;
  #closed = false;
  /** The keys being pressed: one press at a time, in order. */
  #pressing: Promise<void> = Promise.resolve();

  /**
   * `ptimeMs`: the length of the packets we send (default 20); `dropped`: told of each packet
   * dropped unread (the transport's metric).
   */
  constructor(options: {
    socket: dgram.Socket;
    codec: RtpCodec;
    payloadType: number;
    eventPayloadType: number | null;
    eventClockRate?: number;
    remote: { address: string; port: number };
    ptimeMs?: number;
    dropped?: (reason: RtpDropReason) => void;
  }) {
    this.#socket = options.socket;
    this.#codec = options.codec;
    this.#payloadType = options.payloadType;
    this.#eventPayloadType = options.eventPayloadType;
    this.#eventClockRate = options.eventClockRate ?? 8000;
    this.#remote = options.remote;
    this.#packetSamples = Math.round((options.codec.sampleRate * (options.ptimeMs ?? 20)) / 1000);
    this.#limits = new InboundLimiter(() => performance.now(), rtpLimits(options.codec.sampleRate));
    this.#dropped = options.dropped ?? (() => {});
    this.#socket.on('message', this.#onPacket);
    this.#socket.on('error', () => {});
  }

  get localPort(): number {
    return this.#socket.address().port;
  }

  get codec(): RtpCodec {
    return this.#codec;
  }

  start(handlers: RtpHandlers): void {
    this.#handlers = handlers;
  }

  stats(): RtpStats {
    return { ...this.#stats };
  }

  /** Sends audio at the codec's `sampleRate` in packets of the negotiated length; a remainder waits for the next call. */
  send(pcm: Int16Array): void {
    if (this.#closed) return;
    const all = new Int16Array(this.#pending.length + pcm.length);
    all.set(this.#pending);
    all.set(pcm, this.#pending.length);
    const frame = this.#packetSamples;
    const ticks = (frame * this.#codec.clockRate) / this.#codec.sampleRate;
    let offset = 0;
    for (; offset + frame <= all.length; offset += frame) {
      this.#sendPacket(this.#payloadType, this.#codec.encode(all.subarray(offset, offset + frame)), ticks);
    }
    this.#pending = all.slice(offset);
  }

  /** The next packet starts a talkspurt (RFC 3551 4.1: the marker bit after silence). */
  markTalkspurt(): void {
    this.#marker = true;
    this.#pending = new Int16Array(0);
  }

  /** Whether the far end took telephone-event (the keys can be pressed). */
  get canSendDigits(): boolean {
    return this.#eventPayloadType !== null;
  }

  /**
   * Presses `digits` (0-9, *, #, A-D) as RFC 4733 telephone events: for each, an event packet
   * every 20 ms for KEY_TONE_MS (the first with the marker bit, the duration growing), the end
   * three times, then KEY_GAP_MS of nothing. Resolves once the last key is sent. Throws when the
   * far end did not negotiate telephone-event.
   */
  sendDigits(digits: string): Promise<void> {
    const eventPayloadType = this.#eventPayloadType;
    if (eventPayloadType === null) return Promise.reject(new Error('the far end did not negotiate telephone-event'));
    const press = async () => {
      for (const [index, digit] of [...digits].entries()) {
        const event = keyCode(digit);
        if (event < 0) throw new Error(`"${digit}" is not a key`);
        if (this.#closed) return;
        this.#flushAudio();
        const timestamp = this.#timestamp;
        const steps = KEY_TONE_MS / 20;
        // The duration counts the event's clock (what the far end's SDP gave telephone-event).
        const eventTicksPerPacket = this.#eventClockRate / 50;
        const audioTicksPerPacket = this.#codec.clockRate / 50;
        for (let step = 1; step <= steps + END_PACKETS - 1; step++) {
          const end = step >= steps;
          const duration = Math.min(step, steps) * eventTicksPerPacket;
          const payload = new Uint8Array([event, (end ? 0x80 : 0) | KEY_VOLUME, duration >> 8, duration & 0xff]);
          this.#marker = step === 1;
          this.#sendEvent(eventPayloadType, payload, timestamp);
          if (step < steps) await sleep(20);
        }
        // The audio after the key goes on from where the key ended.
        this.#timestamp = (timestamp + steps * audioTicksPerPacket + (KEY_GAP_MS / 1000) * this.#codec.clockRate) >>> 0;
        this.#marker = true;
        // The silence between keys; after the last one, the press is done.
        if (index < digits.length - 1) await sleep(KEY_GAP_MS);
      }
    };
    const next = this.#pressing.then(press);
    this.#pressing = next.catch(() => {});
    return next;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#socket.close();
    this.#codec.close();
  }

  /** Stops reading and sending, leaving the socket open for another session (the answer changed the early media's). */
  detach(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#socket.off('message', this.#onPacket);
    this.#codec.close();
  }

  readonly #onPacket = (data: Buffer, from: dgram.RemoteInfo): void => this.#receive(data, from);

  /** Audio left over from the last send is dropped: a key starts a new talkspurt. */
  #flushAudio(): void {
    this.#pending = new Int16Array(0);
  }

  /** One telephone-event packet: every packet of an event carries its first timestamp (RFC 4733 2.5.1.1). */
  #sendEvent(payloadType: number, payload: Uint8Array, timestamp: number): void {
    if (this.#closed) return;
    const saved = this.#timestamp;
    this.#timestamp = timestamp;
    this.#sendPacket(payloadType, payload, 0);
    this.#timestamp = saved;
  }

  #sendPacket(payloadType: number, payload: Uint8Array, ticks: number): void {
    const packet = Buffer.alloc(RTP_HEADER_BYTES + payload.length);
    packet[0] = 0x80;
    packet[1] = (this.#marker ? 0x80 : 0) | payloadType;
    this.#marker = false;
    packet.writeUInt16BE(this.#seq, 2);
    packet.writeUInt32BE(this.#timestamp >>> 0, 4);
    packet.writeUInt32BE(this.#ssrc, 8);
    packet.set(payload, RTP_HEADER_BYTES);
    this.#seq = (this.#seq + 1) & 0xffff;
    this.#timestamp = (this.#timestamp + ticks) >>> 0;
    this.#stats.packetsOut += 1;
    this.#stats.bytesOut += payload.length;
    this.#socket.send(packet, this.#remote.port, this.#remote.address);
  }

  #receive(data: Buffer, from: dgram.RemoteInfo): void {
    if (this.#closed) return;
    if (from.address !== this.#remote.address || from.port !== this.#remote.port) {
      this.#stats.strayPackets += 1;
      this.#dropped('stray_source');
      return;
    }
    if (data.length < RTP_HEADER_BYTES || data.length > MAX_RTP_BYTES || (data[0] as number) >> 6 !== 2) return;
    const csrcCount = (data[0] as number) & 0x0f;
    const hasExtension = ((data[0] as number) & 0x10) !== 0;
    const hasPadding = ((data[0] as number) & 0x20) !== 0;
    let offset = RTP_HEADER_BYTES + csrcCount * 4;
    if (hasExtension) {
      if (data.length < offset + 4) return;
      offset += 4 + data.readUInt16BE(offset + 2) * 4;
    }
    let end = data.length;
    if (hasPadding) end -= data[data.length - 1] as number;
    if (offset > end) return;
    const payloadType = (data[1] as number) & 0x7f;
    const seq = data.readUInt16BE(2);
    const timestamp = data.readUInt32BE(4);
    const payload = data.subarray(offset, end);
    // The limits are taken before any decoding: a flood costs a header's reading a packet.
    const verdict = this.#limits.audio(payloadType === this.#payloadType ? this.#codec.samplesOf(payload) : 0);
    if (verdict.kind === 'flood' || verdict.messageDropped || verdict.droppedSamples > 0) {
      this.#stats.limitedPackets += 1;
      this.#dropped('rate');
      return;
    }
    const missing = this.#count(seq, timestamp, payload.length);
    if (payloadType === this.#payloadType) {
      // Before the session starts (early media, before the answer) the audio is counted, not decoded.
      if (this.#handlers) this.#receiveAudio(payload, timestamp, missing);
    } else if (payloadType === this.#eventPayloadType && payload.length >= 4) {
      // RFC 4733 2.3: one event spans packets with the same timestamp; report it once.
      if (this.#lastEventTimestamp === timestamp) return;
      this.#lastEventTimestamp = timestamp;
      const digit = KEYPAD_KEYS[payload[0] as number];
      if (digit !== undefined) this.#handlers?.dtmf(digit);
    }
  }

  /**
   * One audio packet decoded, in order: packets lost just before it (a gap in the sequence, and
   * the timestamps jumped by up to a second) are first repaired where the codec can, so the
   * decoder and the caller's timeline go on in order, as far as the repair budget allows. A late
   * or repeated packet is dropped.
   */
  #receiveAudio(payload: Buffer, timestamp: number, missing: number): void {
    if (missing < 0) return;
    const ticksPerSample = this.#codec.clockRate / this.#codec.sampleRate;
    let repaired: Int16Array | null = null;
    if (missing > 0 && this.#nextTimestamp !== null) {
      const gap = Math.round(((timestamp - this.#nextTimestamp + 2 ** 32) % 2 ** 32) / ticksPerSample);
      if (gap > 0 && gap <= MAX_REPAIR_SAMPLES && gap <= this.#repairBudget) repaired = this.#codec.repair(payload, gap);
      if (repaired) this.#repairBudget -= repaired.length;
    }
    const pcm = this.#codec.decode(payload);
    if (!pcm) return;
    this.#repairBudget += pcm.length;
    this.#nextTimestamp = (timestamp + pcm.length * ticksPerSample) % 2 ** 32;
    if (repaired) this.#handlers?.audio(repaired);
    this.#handlers?.audio(pcm);
  }

  /** Counts one packet; returns the packets lost just before it (0 in order, -1 late or repeated). */
  #count(seq: number, timestamp: number, bytes: number): number {
    this.#stats.packetsIn += 1;
    this.#stats.bytesIn += bytes;
    let missing = 0;
    if (this.#expectedNext !== null) {
      const gap = (seq - this.#expectedNext) & 0xffff;
      // A gap below half the space is loss; above, a late or repeated packet.
      if (gap > 0 && gap < 0x8000) this.#stats.packetsLost += gap;
      if (gap < 0x8000) this.#expectedNext = (seq + 1) & 0xffff;
      missing = gap < 0x8000 ? gap : -1;
    } else {
      this.#expectedNext = (seq + 1) & 0xffff;
    }
    // RFC 3550 6.4.1, in the codec's timestamp units.
    const ticksPerMs = this.#codec.clockRate / 1000;
    const arrival = (performance.now() * ticksPerMs) >>> 0;
    const transit = (arrival - timestamp) | 0;
    if (this.#lastTransit !== null) {
      const d = Math.abs((transit - this.#lastTransit) | 0);
      this.#jitter += (d - this.#jitter) / 16;
      this.#stats.jitterMs = Math.round((this.#jitter / ticksPerMs) * 100) / 100;
    }
    this.#lastTransit = transit;
    return missing;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
