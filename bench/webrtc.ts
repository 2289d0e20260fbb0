/**
 * WebRTC benchmark (issue 23), against the WebSocket in the same run, on the instant fake engines
 * (bench/voice.ts's fake server: every turn is answered at once, so what is measured is the
 * transport and the service):
 *
 *   (a) bitrate each way per call, from the call object's `media` (bytes / duration), WebRTC's Opus
 *       against the WebSocket's PCM, in alternating calls;
 *   (b) client-seen reply latency (last speech frame sent -> first agent audio received) and the
 *       server's e2e, both transports, same calls as (a);
 *   (c) concurrent WebRTC calls at rising levels: calls that ended cleanly, e2e p90, and the server
 *       process's CPU per call-second, against as many WebSocket calls at the same level (the
 *       difference is what Opus, SRTP and ICE cost);
 *   (d) calls whose branch is right at 5 % loss and 40 ms jitter against 0 % in the same run, on the
 *       embedded recogniser (bench/webrtc-loss.ts);
 *   (e) the server CPU one call-second costs in Opus (decode 50 frames in, encode 50 out) and in
 *       SRTP (decrypt 50 packets in, encrypt 50 out, AES-CM/HMAC-SHA1-80), timed in this process on
 *       the same code the endpoint runs: the split (c)'s difference cannot give. Both directions
 *       voiced all the time, so an upper bound: a real call's agent is silent (DTX) half of it. Its
 *       baseline row is werift and libopus as shipped (Opus complexity 10, SRTP keys as Buffers).
 *
 * `node bench/webrtc.ts [calls] [levels...]` runs it alone.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { fmt, machine, percentile } from './lib.ts';
import { concat, tone } from '../test/voice/harness.ts';
import { type CallResult, type LoopDelay, type Served, loopDelayProbe, runCall, startServed } from './voice.ts';
import { runWebRtcLossBench } from './webrtc-loss.ts';
import { randomBytes } from 'node:crypto';
import { ProtectionProfileAes128CmHmacSha1_80, RtpHeader, SrtpSession } from 'werift';
import { FRAME_SAMPLES, OpusCodec } from '../src/providers/audio/opus.ts';
import { useKeyObjects } from '../src/lib/werift-srtp-keys.ts';

const SPEECH_MS = 600;
const speech = () => concat(tone(SPEECH_MS));

/** The server child's CPU time so far, ms (utime + stime from /proc). */
function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks of 10 ms
}

const p = (values: number[], q: number) => percentile([...values].sort((a, b) => a - b), q);

/** The callers' (this process's) event-loop delay: high when the bench, not the server, is late. */
const callersLoop = loopDelayProbe();

interface Level {
  ok: number;
  e2eP90: number;
  jitterP90: number;
  cpuMsPerCallSecond: number;
  /** The callers' CPU (this process: every caller's peer connection and Opus encoder), ms per call-second. */
  callersCpuMsPerCallSecond: number;
  serverLoop: LoopDelay;
  callersLoop: LoopDelay;
}

async function level(s: Served, n: number, transport: 'websocket' | 'webrtc', turns: number): Promise<Level> {
  await s.loopDelay();
  callersLoop.take();
  const cpu0 = cpuMs(s.child.pid!);
  const own0 = process.cpuUsage();
  const results = await Promise.all(Array.from({ length: n }, () => runCall(s, speech(), SPEECH_MS, turns, 300, s.agentId, transport).catch(() => null)));
  const cpu = cpuMs(s.child.pid!) - cpu0;
  const own = process.cpuUsage(own0);
  const serverLoop = await s.loopDelay();
  const done = results.filter((r): r is CallResult => r !== null);
  const callSeconds = done.reduce((a, r) => a + r.durationMs / 1000, 0);
  const perCallSecond = (ms: number) => (callSeconds > 0 ? ms / callSeconds : NaN);
  const jitter = done.flatMap((r) => (typeof r.media?.jitter_ms === 'number' ? [r.media.jitter_ms] : []));
  return {
    ok: done.filter((r) => r.ok).length,
    e2eP90: p(done.flatMap((r) => r.e2e), 90),
    jitterP90: jitter.length > 0 ? p(jitter, 90) : NaN,
    cpuMsPerCallSecond: perCallSecond(cpu),
    callersCpuMsPerCallSecond: perCallSecond((own.user + own.system) / 1000),
    serverLoop,
    callersLoop: callersLoop.take(),
  };
}

/**
 * (e) CPU ms per call-second of Opus and of SRTP, both directions, over `seconds` call-seconds of a
 * tone (speech-like for the encoder: never DTX's silence). Each is timed alone (process.cpuUsage).
 */
export function mediaCpu(seconds = 60): { opusMsPerCallSecond: number; opusTenMsPerCallSecond: number; srtpMsPerCallSecond: number; srtpBufferKeysMsPerCallSecond: number } {
  const frames = seconds * 50;
  const pcm = tone(FRAME_SAMPLES / 16);
  const sender = new OpusCodec({ dtx: false });
  const packets = Array.from({ length: 50 }, () => sender.encode(pcm.subarray(0, FRAME_SAMPLES)));
  const cpu = (work: () => void): number => {
    const start = process.cpuUsage();
    work();
    const used = process.cpuUsage(start);
    return (used.user + used.system) / 1000;
  };
  // The endpoint's encoder (ENCODER_COMPLEXITY) and, as the baseline, libopus's default complexity 10.
  const opusCpu = (complexity?: number): number => {
    const codec = new OpusCodec({ dtx: false, ...(complexity === undefined ? {} : { complexity }) });
    const ms = cpu(() => {
      for (let i = 0; i < frames; i++) {
        codec.decode(packets[i % packets.length]!);
        codec.encode(pcm.subarray(0, FRAME_SAMPLES));
      }
    });
    codec.close();
    return ms;
  };
  const opusTen = opusCpu(10);
  const opus = opusCpu();
  sender.close();
  const key = randomBytes(16);
  const salt = randomBytes(14);
  const keys = { localMasterKey: key, localMasterSalt: salt, remoteMasterKey: key, remoteMasterSalt: salt };
  // The endpoint's sessions (keys as KeyObjects: src/lib/werift-srtp-keys.ts) and, as the baseline, werift's own (Buffers).
  const srtpCpu = (keyObjects: boolean): number => {
    const a = new SrtpSession({ keys, profile: ProtectionProfileAes128CmHmacSha1_80 });
    const b = new SrtpSession({ keys, profile: ProtectionProfileAes128CmHmacSha1_80 });
    if (keyObjects) for (const session of [a, b]) useKeyObjects(session);
    return cpu(() => {
      for (let i = 0; i < frames; i++) {
        const header = new RtpHeader({ payloadType: 111, sequenceNumber: i % 65_536, timestamp: i * 960, ssrc: 1234 });
        b.decrypt(a.encrypt(packets[i % packets.length]!, header)); // one packet out (encrypt) and one in (decrypt)
      }
    });
  };
  const srtpBufferKeys = srtpCpu(false);
  const srtp = srtpCpu(true);
  return { opusMsPerCallSecond: opus / seconds, opusTenMsPerCallSecond: opusTen / seconds, srtpMsPerCallSecond: srtp / seconds, srtpBufferKeysMsPerCallSecond: srtpBufferKeys / seconds };
}

export async function runWebRtcBench(options: { calls?: number; levels?: number[]; lossCalls?: number; log?: (line: string) => void } = {}): Promise<string> {
  const log = options.log ?? (() => undefined);
  const calls = options.calls ?? 6;
  const levels = options.levels ?? [10, 25, 50, 100];
  const s = await startServed('fake');
  const out: string[] = [`Machine: ${machine()}`, ''];
  try {
    const by = { websocket: [] as CallResult[], webrtc: [] as CallResult[] };
    for (let i = 0; i < calls; i++) {
      for (const t of ['websocket', 'webrtc'] as const) {
        const r = await runCall(s, speech(), SPEECH_MS, 4, 300, s.agentId, t);
        by[t].push(r);
        log(`# webrtc bench (a,b): ${t} call ${i + 1}/${calls}: ${r.reason}`);
      }
    }
    out.push('| transport | calls ok | in, kbit/s (caller -> server) | out, kbit/s (agent -> caller) | client-seen reply p50 / p90, ms | server e2e p50, ms |', '|---|---|---|---|---|---|');
    for (const t of ['websocket', 'webrtc'] as const) {
      const rs = by[t];
      const rate = (pick: (r: CallResult) => number | null | undefined) => p(rs.map((r) => ((pick(r) ?? 0) * 8) / Math.max(1, r.durationMs)), 50);
      const client = rs.flatMap((r) => r.client);
      out.push(`| ${t} | ${rs.filter((r) => r.ok).length}/${rs.length} | ${fmt(rate((r) => r.media?.bytes_in))} | ${fmt(rate((r) => r.media?.bytes_out))} | ${fmt(p(client, 50), 0)} / ${fmt(p(client, 90), 0)} | ${fmt(p(rs.flatMap((r) => r.e2e), 50), 0)} |`);
    }
    // The caller's RTP jitter as the server measured it (RFC 3550; WebRTC only): high when the callers
    // (one bench process encoding Opus for all) or the network deliver late, not the server's e2e.
    // Event-loop delay p99 / max of both processes: which one is late (the server, or the callers who feed it).
    out.push('', '| concurrent calls | transport | ended cleanly | e2e p90, ms | caller jitter p90 (server-seen), ms | server CPU, ms per call-second | callers\' CPU, ms per call-second | server loop delay p99 / max, ms | callers\' loop delay p99 / max, ms |', '|---|---|---|---|---|---|---|---|---|');
    for (const n of levels) {
      for (const t of ['websocket', 'webrtc'] as const) {
        const r = await level(s, n, t, 3);
        log(`# webrtc bench (c): ${n} ${t}: ${r.ok} ok, p90 ${fmt(r.e2eP90, 0)} ms`);
        const loop = (d: LoopDelay) => `${fmt(d.p99, 0)} / ${fmt(d.max, 0)}`;
        out.push(`| ${n} | ${t} | ${r.ok}/${n} | ${fmt(r.e2eP90, 0)} | ${Number.isNaN(r.jitterP90) ? '-' : fmt(r.jitterP90, 1)} | ${fmt(r.cpuMsPerCallSecond)} | ${fmt(r.callersCpuMsPerCallSecond)} | ${loop(r.serverLoop)} | ${loop(r.callersLoop)} |`);
      }
    }
  } finally {
    await s.stop();
  }
  const media = mediaCpu();
  out.push('', '| server CPU per call-second, both ways voiced (an upper bound), ms | Opus (decode 50 + encode 50 frames) | SRTP (decrypt 50 + encrypt 50 packets) |', '|---|---|---|', `| (e) the endpoint's (Opus complexity 5, SRTP keys as KeyObjects) | ${fmt(media.opusMsPerCallSecond, 2)} | ${fmt(media.srtpMsPerCallSecond, 2)} |`, `| (e) baseline: libopus's default complexity 10, werift's Buffer keys | ${fmt(media.opusTenMsPerCallSecond, 2)} | ${fmt(media.srtpBufferKeysMsPerCallSecond, 2)} |`);
  // (d) The embedded recogniser behind a lossy network: its own server (the fakes would hear anything).
  const lossCalls = options.lossCalls ?? 10;
  const loss = lossCalls === 0 ? 'Loss and recognition: not run (0 calls asked for).' : await runWebRtcLossBench({ calls: lossCalls, log }).catch((error: unknown) => `Loss and recognition: not run (${error instanceof Error ? error.message : String(error)}).`);
  // Its table without its own machine line; a run that failed says why (the one line).
  out.push('', loss.startsWith('Machine:') ? loss.split('\n').slice(2).join('\n') : loss);
  return out.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [calls, ...levels] = process.argv.slice(2).map(Number);
  // WEBRTC_LOSS_CALLS: the calls of (d) (10; 0 skips it, e.g. while profiling (c)).
  const lossCalls = process.env['WEBRTC_LOSS_CALLS'] === undefined ? undefined : Number(process.env['WEBRTC_LOSS_CALLS']);
  process.stdout.write(`${await runWebRtcBench({ ...(calls ? { calls } : {}), ...(levels.length ? { levels } : {}), ...(lossCalls === undefined ? {} : { lossCalls }), log: (l) => process.stderr.write(`${l}\n`) })}\n`);
}
