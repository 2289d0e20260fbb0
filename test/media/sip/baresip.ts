// A real SIP phone for the tests: baresip (Debian), driven through its ctrl_tcp module (netstring
// JSON commands and events), with a WAV file as its microphone and its decoded audio recorded.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { writeWav } from '../../../src/client/web-call-client.ts';
import { FliteTts } from '../../../src/providers/flite/flite.tts.ts';
import { concat, silence } from '../helpers.ts';

/** Whether baresip is installed (scripts/setup.sh installs it). */
export function hasBaresip(): boolean {
  return spawnSync('baresip', ['-h'], { stdio: 'ignore' }).error === undefined;
}
export const NO_BARESIP = 'baresip is not installed (scripts/setup.sh installs it)';

/** The flow the baresip calls are routed by: "sales"/"buy" or "support"/"help" at the greeting. */
export const ROUTING = {
  start_node_id: 'greet',
  nodes: [
    {
      id: 'greet',
      type: 'conversation',
      instruction: { type: 'static_text', text: 'Sales or support?' },
      edges: [
        { id: 'to_sales', destination_node_id: 'sales', transition_condition: { type: 'keyword', keywords: ['sales', 'buy'] } },
        { id: 'to_support', destination_node_id: 'support', transition_condition: { type: 'keyword', keywords: ['support', 'help'] } },
      ],
    },
    { id: 'sales', type: 'end', instruction: { type: 'static_text', text: 'Sales it is. Goodbye.' } },
    { id: 'support', type: 'end', instruction: { type: 'static_text', text: 'Support it is. Goodbye.' } },
  ],
};

/**
 * A caller's microphone for baresip to play: `leadMs` of quiet (while the greeting plays), Flite
 * kal16 saying `text`, 8 s of quiet; at the rate and channels baresip's codec takes files in.
 */
export async function fliteCallerWav(dir: string, name: string, text: string, options: { leadMs: number; rate: number; channels: 1 | 2 }): Promise<string> {
  const flite = new FliteTts();
  const parts: Int16Array[] = [];
  for await (const c of flite.synthesize(text, { voiceId: 'flite-kal16' })) parts.push(c);
  await flite.close();
  const wav16k = path.join(dir, `${name}-16k.wav`);
  fs.writeFileSync(wav16k, writeWav(concat(silence(options.leadMs), ...parts, silence(8_000)), 16_000));
  const wav = path.join(dir, `${name}.wav`);
  const made = spawnSync('sox', [wav16k, '-r', String(options.rate), '-c', String(options.channels), wav], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`sox failed: ${made.stderr}`);
  return wav;
}

export interface BaresipEvent {
  type: string;
  class?: string;
  param?: string;
  id?: string;
  peeruri?: string;
  [key: string]: unknown;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface BaresipOptions {
  wav?: string;
  user?: string;
  answer?: 'manual' | 'auto';
  tcp?: boolean;
  /** The codecs the phone offers and takes, baresip's `audio_codecs` (default `PCMU,PCMA`; `opus` loads its Opus module, and then `wav` must be 48 kHz stereo). */
  codecs?: string;
}

export class Baresip {
  readonly dir: string;
  readonly sipPort: number;
  readonly events: BaresipEvent[] = [];
  readonly #child: ChildProcess;
  readonly #ctrl: net.Socket;
  #buffer = Buffer.alloc(0);
  #waiters: Array<() => void> = [];
  #token = 0;
  readonly output: string[] = [];

  private constructor(dir: string, sipPort: number, child: ChildProcess, ctrl: net.Socket) {
    this.dir = dir;
    this.sipPort = sipPort;
    this.#child = child;
    this.#ctrl = ctrl;
    ctrl.on('data', (chunk) => this.#read(chunk));
    child.stdout?.on('data', (d) => this.output.push(String(d)));
    child.stderr?.on('data', (d) => this.output.push(String(d)));
  }

  /**
   * Starts a phone: `wav` is what its microphone says (8 kHz or 16 kHz mono WAV); `answer` auto-answers
   * calls; `tcp` listens on TCP too (same port) as well as UDP. Ports are picked free just before baresip binds them, so another process can take one in
   * between: a phone that does not come up is ended and started again on new ports (three tries).
   */
  static async start(options: BaresipOptions = {}): Promise<Baresip> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await Baresip.#startOnce(options);
      } catch (error) {
        if (attempt === 3) throw error;
      }
    }
  }

  static async #startOnce(options: BaresipOptions): Promise<Baresip> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-baresip-'));
    const sipPort = await freePort();
    let ctrlPort = await freePort();
    while (ctrlPort === sipPort) ctrlPort = await freePort();
    // Above the RTP ranges the tests give the SIP endpoint (42000-47998).
    const rtpBase = 50_000 + Math.floor(Math.random() * 7_000) * 2;
    let wav = options.wav;
    if (!wav) {
      // 30 s of silence: packets the server counts, no speech to barge in with (baresip's Opus takes 48 kHz files only).
      wav = path.join(dir, 'silence.wav');
      spawnSync('sox', ['-n', ...(/opus/i.test(options.codecs ?? '') ? ['-r', '48000', '-c', '2'] : ['-r', '8000', '-c', '1']), '-b', '16', wav, 'trim', '0', '30']);
    }
    const source = `aufile,${wav}`;
    fs.writeFileSync(
      path.join(dir, 'config'),
      [
        'poll_method epoll',
        'net_interface 127.0.0.1',
        `sip_listen 127.0.0.1:${sipPort}`,
        `sip_transports ${options.tcp ? 'udp,tcp' : 'udp'}`,
        `audio_source ${source}`,
        'audio_player aubridge,nil',
        'audio_alert aubridge,nil',
        `rtp_ports ${rtpBase}-${rtpBase + 20}`,
        'module_path /usr/lib/baresip/modules',
        'module g711.so',
        ...(/opus/i.test(options.codecs ?? '') ? ['module opus.so'] : []),
        'module aufile.so',
        'module aubridge.so',
        'module sndfile.so',
        'module_app account.so',
        'module_app menu.so',
        'module_app ctrl_tcp.so',
        `ctrl_tcp_listen 127.0.0.1:${ctrlPort}`,
        `snd_path ${dir}`,
        'dns_server 127.0.0.1:53',
        '',
      ].join('\n'),
    );
    fs.writeFileSync(path.join(dir, 'accounts'), `<sip:${options.user ?? 'caller'}@127.0.0.1:${sipPort}>;regint=0;audio_codecs=${options.codecs ?? 'PCMU,PCMA'};answermode=${options.answer ?? 'manual'}\n`);
    const child = spawn('baresip', ['-f', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        const ctrl = await new Promise<net.Socket>((resolve, reject) => {
          const socket = net.connect(ctrlPort, '127.0.0.1', () => resolve(socket));
          socket.once('error', reject);
        });
        return new Baresip(dir, sipPort, child, ctrl);
      } catch (error) {
        if (Date.now() > deadline || child.exitCode !== null) {
          child.kill('SIGKILL'); // never left running: it would keep the test process alive
          fs.rmSync(dir, { recursive: true, force: true });
          throw new Error(`baresip did not start: ${String(error)}`, { cause: error });
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  /** Sends a menu command (`dial`, `hangup`, `accept`, `sndcode`, `transfer`, ...). */
  command(command: string, params = ''): void {
    const json = JSON.stringify({ command, params, token: String(++this.#token) });
    this.#ctrl.write(`${Buffer.byteLength(json)}:${json},`);
  }

  /** The first event (from the start) that `match` takes, waiting up to `timeoutMs`. */
  async waitFor(match: (event: BaresipEvent) => boolean, timeoutMs = 10_000): Promise<BaresipEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.find(match);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`baresip: no such event; saw ${this.events.map((e) => e.type).join(', ')}\n${this.output.join('').slice(-2000)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** WAV files sndfile recorded (what the phone heard is in the `-dec.wav` one). */
  recordings(): string[] {
    return fs.readdirSync(this.dir).filter((name) => name.endsWith('.wav')).map((name) => path.join(this.dir, name));
  }

  async close(): Promise<void> {
    this.#ctrl.destroy();
    if (this.#child.exitCode === null) {
      const exited = new Promise((resolve) => this.#child.once('exit', resolve));
      this.#child.kill('SIGTERM');
      const timer = setTimeout(() => this.#child.kill('SIGKILL'), 2_000);
      await exited;
      clearTimeout(timer);
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  #read(chunk: Buffer): void {
    this.#buffer = Buffer.concat([this.#buffer, chunk]);
    for (;;) {
      const colon = this.#buffer.indexOf(':');
      if (colon < 0) return;
      const length = Number(this.#buffer.subarray(0, colon).toString());
      if (this.#buffer.length < colon + 1 + length + 1) return;
      const body = this.#buffer.subarray(colon + 1, colon + 1 + length).toString();
      this.#buffer = this.#buffer.subarray(colon + 2 + length);
      try {
        const message = JSON.parse(body) as BaresipEvent & { event?: boolean };
        if (message.event) this.events.push(message);
      } catch {
        // a response to a command: not an event
      }
      for (const wake of this.#waiters.splice(0)) wake();
    }
  }
}
