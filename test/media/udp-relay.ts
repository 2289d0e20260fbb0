/**
 * A userland UDP relay for WebRTC tests (the kernel here has no netem): it sits between the two
 * peers on both sides, so neither ever learns the other's address, and drops and delays RTP
 * packets (`loss`, a random delay up to `jitterMs`). ICE, DTLS and RTCP pass untouched, so the call
 * connects as on a real network and only the media suffers. `rewrite` puts the relay in an SDP:
 * each host candidate is replaced by a relay port that forwards to it.
 */
import dgram from 'node:dgram';

export interface RelayOptions {
  /** Fraction of RTP packets dropped, 0..1. */
  loss: number;
  /** Each RTP packet is delayed by a uniform random 0..jitterMs, ms. */
  jitterMs: number;
  /** Seeded randomness, so a run can be repeated. */
  random?: () => number;
}

export class UdpRelay {
  readonly #options: RelayOptions;
  readonly #random: () => number;
  readonly #sockets: dgram.Socket[] = [];
  /** RTP packets seen and dropped, by the side they were going to (the `to` of `rewrite`). */
  readonly counts = { rtp: 0, dropped: 0, droppedTo: {} as Record<string, number> };
  /** Loss and jitter apply only while armed (set it once the call runs, so every drop is counted by the receiver). */
  armed = true;
  #closed = false;

  constructor(options: RelayOptions) {
    this.#options = options;
    this.#random = options.random ?? Math.random;
  }

  /** Replaces every IPv4 host candidate of `sdp` (the `to` side's) with a relay port on 127.0.0.1 that forwards to it; `counts.droppedTo` names the side a packet was going to. */
  async rewrite(sdp: string, to: 'client' | 'server'): Promise<string> {
    const lines = sdp.split(/\r?\n/);
    const out: string[] = [];
    for (const line of lines) {
      const m = /^(a=candidate:\S+ \d+ udp \d+ )(\d+\.\d+\.\d+\.\d+) (\d+)( typ host.*)$/i.exec(line);
      if (!m) {
        if (!/^a=candidate:/.test(line)) out.push(line); // TCP and other candidates are left out
        continue;
      }
      const port = await this.#forward(m[2]!, Number(m[3]), to);
      out.push(`${m[1]}127.0.0.1 ${port}${m[4]}`);
    }
    return out.join('\r\n');
  }

  /** A listening port whose every source gets its own upstream socket to `host:port`. */
  async #forward(host: string, port: number, to: 'client' | 'server'): Promise<number> {
    const back = to === 'client' ? 'server' : 'client';
    const listen = await this.#bind();
    const upstreams = new Map<string, Promise<dgram.Socket>>();
    const upstream = async (from: dgram.RemoteInfo): Promise<dgram.Socket> => {
      const socket = await this.#bind();
      socket.on('message', (reply) => this.#pass(reply, back, () => listen.send(reply, from.port, from.address)));
      return socket;
    };
    listen.on('message', (packet, from) => {
      const key = `${from.address}:${from.port}`;
      let up = upstreams.get(key);
      if (!up) {
        up = upstream(from);
        upstreams.set(key, up);
      }
      void up.then((socket) => this.#pass(packet, to, () => socket.send(packet, port, host)));
    });
    return listen.address().port;
  }

  #pass(packet: Buffer, to: string, deliver: () => void): void {
    const send = () => {
      if (!this.#closed) deliver();
    };
    // RTP: version 2, payload types 96..127 (RTCP's 200..206 and STUN/DTLS pass untouched).
    const isRtp = packet.length > 12 && (packet[0]! & 0xc0) === 0x80 && (packet[1]! & 0x7f) >= 96 && (packet[1]! & 0x7f) <= 127;
    if (!isRtp || !this.armed) return send();
    this.counts.rtp += 1;
    if (this.#random() < this.#options.loss) {
      this.counts.dropped += 1;
      this.counts.droppedTo[to] = (this.counts.droppedTo[to] ?? 0) + 1;
      return;
    }
    setTimeout(send, this.#random() * this.#options.jitterMs);
  }

  async #bind(): Promise<dgram.Socket> {
    const socket = dgram.createSocket('udp4');
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    this.#sockets.push(socket);
    return socket;
  }

  close(): void {
    this.#closed = true;
    for (const socket of this.#sockets.splice(0)) socket.close();
  }
}

/** A seeded PRNG (mulberry32). */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
