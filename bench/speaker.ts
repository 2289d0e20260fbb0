/**
 * What comes out of the speakers, for the browser bench: a private PulseAudio server (Debian's
 * `pulseaudio`, scripts/setup.sh) with one null sink, Chromium playing to it (`PULSE_SERVER`, and
 * without the `--mute-audio` playwright adds to headless browsers), and `parec` recording the
 * sink's monitor. A null sink consumes what its clients play on the sound server's clock, as a
 * sound card would, and its monitor carries each sample when it is consumed: so an onset in the
 * recording is when the page's audio would leave a real device (less the card's own latency, the
 * same for any page). Onsets are given on the epoch clock in ms (`performance.timeOrigin +
 * performance.now()`), as a page's own times are with its `performance.timeOrigin` added.
 *
 * The recording's clock: each chunk from `parec` is stamped on arrival; the recording's start is
 * the earliest of (arrival - samples so far / rate) over all chunks, i.e. the chunk that waited
 * least (parec asks for 5 ms fragments).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const RATE = 48_000;

/**
 * A sample at or below this (of full scale 1, -40 dBFS) is silence for the onset taps (the page's
 * worklet and the speaker recording). Flite's "Okay." (kal16, the agent's voice in the browser
 * bench) opens with about 220 ms of breath-level sound, RMS 5 to 11 of 32768 with peaks of 33,
 * before the word: the bench's first threshold, 1e-3 (32.8), fired on those peaks in the PCM the
 * WebSocket carries and not in Opus's decoding of them, which put the WebSocket's "heard" up to
 * 200 ms before the word and WebRTC's at it (BENCHMARKS.md, "The browser's share at the speaker").
 * The word passes 0.01 within its first 20 ms (test/media/bench-onset.test.ts).
 */
export const ONSET_LEVEL = 0.01;

export interface Speaker {
  /** Environment for the browser: its audio goes to the null sink. */
  env: Record<string, string>;
  /** Starts of sound in the recording so far: the first sample above `level` (of full scale 1) after `quietMs` at or below it, epoch ms. */
  onsets(level: number, quietMs: number): number[];
  /** The recording so far: mono PCM16 at `rate`, its first sample at `start` (epoch ms). */
  recording(): { start: number; rate: number; pcm: Buffer };
  close(): Promise<void>;
}

/** Why the speaker cannot be measured here, or false. */
export const NO_PULSEAUDIO = hasCommands(['pulseaudio', 'parec']) ? false : 'no pulseaudio/parec: apt-get install pulseaudio pulseaudio-utils (the browser bench then measures at the speaker too)';

function hasCommands(names: string[]): boolean {
  return names.every((name) => {
    try {
      execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * Indices of the samples where sound starts: the first sample above `level` (of full scale 1)
 * after at least `quietSamples` at or below it (the same rule as the bench's tap worklet).
 */
export function onsetsOf(samples: Int16Array, level: number, quietSamples: number): number[] {
  const threshold = level * 32768;
  const found: number[] = [];
  let run = Infinity;
  for (let i = 0; i < samples.length; i++) {
    if (Math.abs(samples[i]!) <= threshold) {
      run++;
      continue;
    }
    if (run >= quietSamples) found.push(i);
    run = 0;
  }
  return found;
}

export async function startSpeaker(): Promise<Speaker> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-speaker-'));
  const socket = path.join(dir, 'native');
  const env = { ...process.env, HOME: dir, XDG_RUNTIME_DIR: dir, XDG_CONFIG_HOME: dir, PULSE_SERVER: `unix:${socket}` };
  const server = spawn('pulseaudio', [
    '-n', '--daemonize=no', '--exit-idle-time=-1', '--use-pid-file=no', '--log-target=stderr', '--log-level=error',
    '-L', `module-native-protocol-unix socket=${socket} auth-anonymous=1`,
    '-L', `module-null-sink sink_name=speaker rate=${RATE} channels=2`,
  ], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let serverLog = '';
  server.stderr.on('data', (chunk: Buffer) => (serverLog = (serverLog + chunk.toString()).slice(-2000)));
  const children: ChildProcess[] = [server];
  const close = async () => {
    for (const child of children.reverse()) {
      if (child.exitCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const deadline = Date.now() + 10_000;
    while (!fs.existsSync(socket)) {
      if (server.exitCode !== null || Date.now() > deadline) throw new Error(`pulseaudio did not start: ${serverLog}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const recorder = spawn('parec', ['--device=speaker.monitor', '--raw', '--format=s16le', `--rate=${RATE}`, '--channels=1', '--latency-msec=5'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(recorder);
    const chunks: Buffer[] = [];
    let samples = 0;
    let start = Infinity;
    recorder.stdout.on('data', (chunk: Buffer) => {
      const now = performance.timeOrigin + performance.now();
      chunks.push(chunk);
      samples += chunk.length / 2;
      start = Math.min(start, now - (samples / RATE) * 1000);
    });
    return {
      env: { PULSE_SERVER: env.PULSE_SERVER },
      onsets(level, quietMs) {
        const pcm = Buffer.concat(chunks);
        const samples = new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length >> 1);
        return onsetsOf(samples, level, (quietMs / 1000) * RATE).map((i) => start + (i / RATE) * 1000);
      },
      recording: () => ({ start, rate: RATE, pcm: Buffer.concat(chunks) }),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
