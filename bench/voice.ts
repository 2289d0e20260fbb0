/**
 * Voice benchmark: end-to-end reply latency of web calls through the real server process and the
 * Node client, in real time.
 *
 *   (a) embedded engines (fvad, PocketSphinx, Flite), >= 20 turns of Flite speech with the agent
 *       defaults, and as many with `preemptive_replies` off (the baseline), in alternating calls;
 *   (b) instant fake engines (energy VAD, a recogniser that answers at once, instant synthesis),
 *       which isolates the service's own overhead beyond the 500 ms end-of-turn silence;
 *   (c) with (b): the most concurrent calls this machine holds while p90 e2e stays under 1 s;
 *   (d) the early cut-in set (test/voice/cut-in-set.ts: 20 sentences with a 400-700 ms pause in
 *       the middle) in real time on fvad + PocketSphinx: the early-reply rate with the adaptive
 *       end of turn (the agent defaults) and with the fixed 500 ms one.
 *
 * (a) runs the agent's default adaptive end of turn; (b) and (c) an agent whose minimum and
 * maximum end-of-turn silence are both 500 ms, so their overhead figure stays comparable.
 *
 * e2e is the server's own figure (the call object's `latency.e2e`: end of user speech -> first
 * agent audio frame sent); "client" is the same interval as the Node client saw it (last speech
 * frame sent -> first agent audio received), which adds the client's own scheduling.
 *
 * `node bench/voice.ts` runs it alone; `runVoiceBench(options)` returns the markdown tables.
 * The server runs as a child (`node bench/voice.ts --serve fake|embedded`) so the load generator
 * and the server do not share an event loop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebCallClient } from '../src/client/web-call-client.ts';
import { fmt, machine, percentile } from './lib.ts';
import { memoryBreakdown, type MemoryBreakdown } from './memory-breakdown.ts';
// The same audio builders as the voice tests: a 300 Hz tone is "speech" to the energy VAD.
import { concat, tone } from '../test/voice/harness.ts';
import { runCutInSet } from '../test/voice/cut-in-set.ts';
import { createSilentLogger } from '../src/lib/logger.ts';
import { PocketsphinxStt } from '../src/providers/pocketsphinx/pocketsphinx.stt.ts';

export interface VoiceBenchOptions {
  /** Turns of the embedded run (a); default 20. */
  embeddedTurns?: number;
  /** Turns of the fake run (b); default 30. */
  fakeTurns?: number;
  /** Concurrency levels tried in (c), in order, until one fails; default 25, 50, 100, 200, 300, 400, 500, 600, 800. */
  levels?: number[];
  /** Turns per call at each level; default 6. */
  turnsPerCall?: number;
  /** Skip (a) (e.g. no pocketsphinx). Default: run it when pocketsphinx_continuous is installed. */
  embedded?: boolean;
  log?: (line: string) => void;
}

export interface Served {
  baseUrl: string;
  apiKey: string;
  agentId: string;
  /** The same agent with preemptive replies off (embedded only). */
  plainAgentId?: string;
  child: ChildProcess;
  /** The server's event-loop delay since the last call (p50, p99, max, ms), asked of the child by SIGUSR2. */
  loopDelay(): Promise<LoopDelay>;
  /** Where the server's memory is now (`collect`: after a full garbage collection), read inside it (bench/memory-breakdown.ts). */
  memory(collect?: boolean): Promise<MemoryBreakdown>;
  stop(): Promise<void>;
}

/** An event loop's delay over a stretch of time, ms. */
export interface LoopDelay {
  p50: number;
  p99: number;
  max: number;
}

/** A running event-loop delay probe (10 ms resolution): `take` reads and resets it. */
export function loopDelayProbe(): { take(): LoopDelay } {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  return {
    take() {
      const ms = (ns: number) => ns / 1e6;
      const out = { p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max) };
      histogram.reset();
      return out;
    },
  };
}

const SELF = fileURLToPath(import.meta.url);
const END_OF_TURN_MS = 500;

// --- server side (child process) ------------------------------------------------------------

async function serve(kind: 'fake' | 'embedded'): Promise<void> {
  const { loadConfig } = await import('../src/config/config.ts');
  const { createRuntime } = await import('../src/runtime.ts');
  const { buildApp } = await import('../src/app.ts');
  const { buildProviders } = await import('../src/providers/registry.ts');
  const { EnergyVad, FakeTts } = await import('../src/providers/fake/fake.providers.ts');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-bench-voice-'));
  // WebRTC calls (bench/webrtc.ts) stay on loopback.
  // The embedded recogniser's pool bounds (POCKETSPHINX_MAX_DECODERS...) pass through, so a run can compare them.
  const pool = Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('POCKETSPHINX_')));
  const config = loadConfig({ ...pool, DATA_DIR: dataDir, PORT: '0', WEBHOOK_WORKER: 'false', LOG_LEVEL: 'warn', RTC_BIND_ADDRESS: '127.0.0.1', RTC_ICE_TCP: 'false' });
  // BENCH_PROGRESS_EVERY_MS: the decoder's progress cadence before issue 25 (200 ms), for the baseline row.
  const progressEveryMs = Number(process.env['BENCH_PROGRESS_EVERY_MS'] ?? 0);
  const providers =
    kind === 'embedded'
      ? { ...buildProviders(config.media.providers), ...(progressEveryMs > 0 ? { stt: new PocketsphinxStt({ progressEveryMs }) } : {}) }
      : {
          llm: undefined,
          // Recognition that answers at once: every utterance is "hello".
          stt: { id: 'instant', languages: () => ['en-US'], openStream: async () => ({ write() {}, finalize: async () => ({ text: 'hello' }), close: async () => {} }) },
          tts: new FakeTts({ msPerChar: 60 }),
          vad: new EnergyVad(),
          close: async () => {},
        };
  const runtime = await createRuntime(config, { logger: createSilentLogger(), providers });
  const app = await buildApp(runtime);
  await app.listen({ port: 0, host: '127.0.0.1' });
  runtime.media.providers.stt.warm?.();
  const address = app.server.address() as { port: number };
  const account = await runtime.services.accounts.createAccount({ trialEndsAt: null, rateLimitPerMinute: 10_000_000 });
  const flow = await runtime.services.agents.createFlow(account.account_id, {
    start_node_id: 'loop',
    nodes: [{ id: 'loop', type: 'conversation', instruction: { type: 'static_text', text: 'Okay.' } }],
  });
  const agent = await runtime.services.agents.createAgent(account.account_id, {
    response_engine: { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id },
    end_call_after_silence_ms: 600_000,
    ...(kind === 'fake' ? { end_of_turn_min_silence_ms: END_OF_TURN_MS, end_of_turn_max_silence_ms: END_OF_TURN_MS } : {}),
  });
  const plain =
    kind === 'embedded'
      ? await runtime.services.agents.createAgent(account.account_id, {
          response_engine: { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id },
          end_call_after_silence_ms: 600_000,
          preemptive_replies: false,
        })
      : undefined;
  process.stdout.write(`${JSON.stringify({ baseUrl: `http://127.0.0.1:${address.port}`, apiKey: account.api_key, agentId: agent.agent_id, plainAgentId: plain?.agent_id })}\n`);
  const stop = async () => {
    await runtime.media.sessions.close();
    await app.close();
    await runtime.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  // The bench asks for the server's event-loop delay between its levels: one JSON line back.
  const probe = loopDelayProbe();
  process.on('SIGUSR2', () => process.stdout.write(`${JSON.stringify({ loopDelay: probe.take() })}\n`));
  // ... and, a line "memory" on its stdin, where its memory is; "memory collect": after a full
  // garbage collection (what V8 held was garbage or live), which stops the server for a moment:
  // at the end of a run only, since it changes what comes after.
  let asked = '';
  process.stdin.on('data', (c: Buffer) => {
    asked += c.toString();
    for (let nl = asked.indexOf('\n'); nl >= 0; nl = asked.indexOf('\n')) {
      const line = asked.slice(0, nl);
      if (line === 'memory' || line === 'memory collect') process.stdout.write(`${JSON.stringify({ memory: memoryBreakdown({ collect: line === 'memory collect' }) })}\n`);
      asked = asked.slice(nl + 1);
    }
  });
}

export async function startServed(kind: 'fake' | 'embedded', env: Record<string, string> = {}): Promise<Served> {
  const child = spawn(process.execPath, [SELF, '--serve', kind], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  const info = await new Promise<{ baseUrl: string; apiKey: string; agentId: string; plainAgentId?: string }>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('bench server did not start')), 30_000);
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) {
        clearTimeout(timer);
        resolve(JSON.parse(line));
      }
    });
    child.once('exit', (code) => reject(new Error(`bench server exited ${code}`)));
  });
  const delays: ((d: LoopDelay) => void)[] = [];
  const memories: ((m: MemoryBreakdown) => void)[] = [];
  let lines = '';
  child.stdout.on('data', (c: Buffer) => {
    lines += c.toString();
    let nl: number;
    while ((nl = lines.indexOf('\n')) >= 0) {
      const line = lines.slice(0, nl);
      lines = lines.slice(nl + 1);
      if (line.startsWith('{"loopDelay"')) delays.shift()?.((JSON.parse(line) as { loopDelay: LoopDelay }).loopDelay);
      else if (line.startsWith('{"memory"')) memories.shift()?.((JSON.parse(line) as { memory: MemoryBreakdown }).memory);
    }
  });
  return {
    ...info,
    child,
    memory(collect = false) {
      return new Promise((resolve) => {
        memories.push(resolve);
        child.stdin.write(collect ? 'memory collect\n' : 'memory\n');
      });
    },
    loopDelay() {
      return new Promise<LoopDelay>((resolve) => {
        delays.push(resolve);
        child.kill('SIGUSR2');
      });
    },
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

// --- client side ------------------------------------------------------------------------------

export interface CallResult {
  /** How the call was carried, as the server measured it (the call object's `media`). */
  media: { bytes_in: number | null; bytes_out: number | null; jitter_ms?: number | null } | null;
  durationMs: number;
  ok: boolean;
  reason: string;
  e2e: number[];
  client: number[];
  asr: number[];
  tts: number[];
}

/** One call: `turns` times (speech, then wait for the agent's reply to end), then hang up. */
export async function runCall(s: Served, speech: Int16Array, speechMs: number, turns: number, gapMs: number, agentId = s.agentId, transport: 'websocket' | 'webrtc' = 'websocket'): Promise<CallResult> {
  const res = await fetch(`${s.baseUrl}/v2/create-web-call`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ agent_id: agentId }),
  });
  const created = (await res.json()) as { access_token: string; call_id: string };
  const client = await WebCallClient.join({ url: s.baseUrl, accessToken: created.access_token, timeoutMs: 30_000, transport, ...(transport === 'webrtc' ? { iceAddress: '127.0.0.1' } : {}) });
  const clientE2e: number[] = [];
  try {
    await client.waitFor((e) => e.type === 'agent_stop_talking', 15_000); // the greeting
    for (let t = 0; t < turns; t++) {
      const playAt = client.now();
      const stopsBefore = client.events.filter((e) => e.type === 'agent_stop_talking').length;
      await client.play(speech);
      const speechEnd = playAt + speechMs;
      await client.waitFor((e) => e.type === 'agent_stop_talking' && client.events.filter((x) => x.type === 'agent_stop_talking').indexOf(e) >= stopsBefore, 15_000);
      const first = client.agentAudio.find((a) => a.atMs > speechEnd);
      if (first) clientE2e.push(first.atMs - speechEnd);
      await new Promise((r) => setTimeout(r, gapMs));
    }
    await client.hangup();
  } catch {
    client.drop();
  }
  const end = await client.ended;
  const call = (await (await fetch(`${s.baseUrl}/v2/get-call/${created.call_id}`, { headers: { authorization: `Bearer ${s.apiKey}` } })).json()) as {
    latency: { e2e: { values: number[] }; asr: { values: number[] }; tts: { values: number[] } } | null;
    media: { bytes_in: number | null; bytes_out: number | null; jitter_ms?: number | null } | null;
    duration_ms: number | null;
  };
  return {
    media: call.media,
    durationMs: call.duration_ms ?? 0,
    ok: end.disconnection_reason === 'user_hangup',
    reason: end.disconnection_reason,
    e2e: call.latency?.e2e.values ?? [],
    client: clientE2e,
    asr: call.latency?.asr.values ?? [],
    tts: call.latency?.tts.values ?? [],
  };
}

function stats(values: number[]): { p50: number; p90: number; p99: number; n: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99), n: sorted.length };
}

async function flite(text: string): Promise<Int16Array> {
  const { FliteTts } = await import('../src/providers/flite/flite.tts.ts');
  const tts = new FliteTts();
  const parts: Int16Array[] = [];
  for await (const c of tts.synthesize(text, { voiceId: 'flite-kal16' })) parts.push(c);
  await tts.close();
  return concat(...parts);
}

/** End of the last 20 ms frame above a speech level (RMS 300), ms. */
export function voicedEndMs(pcm: Int16Array): number {
  let end = 0;
  for (let i = 0; i + 320 <= pcm.length; i += 320) {
    let e = 0;
    for (let k = i; k < i + 320; k++) e += pcm[k]! * pcm[k]!;
    if (Math.sqrt(e / 320) > 300) end = ((i + 320) / 16000) * 1000;
  }
  return end;
}

function hasPocketsphinx(): boolean {
  return (process.env.PATH ?? '').split(':').some((d) => fs.existsSync(path.join(d, 'pocketsphinx_continuous')));
}

export async function runVoiceBench(options: VoiceBenchOptions = {}): Promise<string> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const rows: string[] = [];
  const row = (name: string, r: CallResult[], fixedEndOfTurn: boolean) => {
    const e2e = stats(r.flatMap((x) => x.e2e));
    const client = stats(r.flatMap((x) => x.client));
    const asr = stats(r.flatMap((x) => x.asr));
    const tts = stats(r.flatMap((x) => x.tts));
    rows.push(
      `| ${name} | ${e2e.n} | ${fmt(e2e.p50, 0)} / ${fmt(e2e.p90, 0)} / ${fmt(e2e.p99, 0)} | ${fixedEndOfTurn ? fmt(e2e.p50 - END_OF_TURN_MS, 0) : 'adaptive'} | ${fmt(client.p50, 0)} / ${fmt(client.p90, 0)} | ${fmt(asr.p50, 0)} | ${fmt(tts.p50, 0)} |`,
    );
    return e2e;
  };

  if (options.embedded ?? hasPocketsphinx()) {
    log('voice bench (a): embedded engines, preemptive replies on and off in alternating calls');
    const speech = await flite('i would like to buy something');
    const speechMs = voicedEndMs(speech); // Flite pads its clips with silence
    const s = await startServed('embedded');
    try {
      const turns = Math.ceil((options.embeddedTurns ?? 20) / 2);
      const on: CallResult[] = [];
      const off: CallResult[] = [];
      for (let i = 0; i < 4; i++) {
        const plain = i % 2 === 1;
        (plain ? off : on).push(await runCall(s, concat(speech, new Int16Array(16000 * 1.2)), speechMs, turns, 300, plain ? s.plainAgentId : s.agentId));
      }
      row('(a) embedded: fvad + PocketSphinx + Flite kal16 (agent defaults)', on, false);
      row('(a) the same, preemptive replies off (baseline)', off, false);
    } finally {
      await s.stop();
    }
    // The decoder's progress reported every 200 ms of audio, as before issue 25: the adaptive end
    // of turn's "250 ms decoded" guard waited up to one report longer.
    log('voice bench (a): the same, decoder progress every 200 ms (before)');
    const before = await startServed('embedded', { BENCH_PROGRESS_EVERY_MS: '200' });
    try {
      const turns = Math.ceil((options.embeddedTurns ?? 20) / 2);
      const r: CallResult[] = [];
      for (let i = 0; i < 2; i++) r.push(await runCall(before, concat(speech, new Int16Array(16000 * 1.2)), speechMs, turns, 300));
      row('(a) agent defaults, decoder progress every 200 ms of audio (before)', r, false);
    } finally {
      await before.stop();
    }
  } else {
    rows.push(`| (a) embedded | skipped${options.embedded === false ? '' : ': pocketsphinx_continuous not installed'} | | | | | |`);
  }

  log('voice bench (b): instant fake engines, one call');
  const fakeTurn = concat(tone(400), new Int16Array(16000 * 0.8));
  const s = await startServed('fake');
  const levels: string[] = [];
  let held = 0;
  try {
    const b = await runCall(s, fakeTurn, 400, options.fakeTurns ?? 30, 200);
    row('(b) instant fakes (energy VAD, instant STT/TTS)', [b], true);

    for (const n of options.levels ?? [25, 50, 100, 200, 300, 400, 500, 600, 800]) {
      log(`voice bench (c): ${n} concurrent calls`);
      const started = performance.now();
      const results = await Promise.all(
        Array.from({ length: n }, async (_, i) => {
          await new Promise((r) => setTimeout(r, (i * 1500) / n)); // stagger the starts over one turn
          return runCall(s, fakeTurn, 400, options.turnsPerCall ?? 6, 200).catch(
            (): CallResult => ({ ok: false, reason: 'client_failed', e2e: [], client: [], asr: [], tts: [], media: null, durationMs: 0 }),
          );
        }),
      );
      const e2e = stats(results.flatMap((r) => r.e2e));
      const client = stats(results.flatMap((r) => r.client));
      const failed = results.filter((r) => !r.ok).length;
      const pass = failed === 0 && e2e.p90 < 1000;
      levels.push(`| ${n} | ${e2e.n} | ${fmt(e2e.p50, 0)} / ${fmt(e2e.p90, 0)} / ${fmt(e2e.p99, 0)} | ${fmt(client.p50, 0)} / ${fmt(client.p90, 0)} | ${failed} | ${fmt((performance.now() - started) / 1000, 1)} s | ${pass ? 'yes' : 'no'} |`);
      if (!pass) break;
      held = n;
    }
  } finally {
    await s.stop();
  }

  const cutIn: string[] = [];
  if (options.embedded ?? hasPocketsphinx()) {
    for (const [name, eot] of [
      ['adaptive (agent defaults: responsiveness 1, 250-1200 ms)', { responsiveness: 1, minSilenceMs: 250, maxSilenceMs: 1200 }],
      ['fixed 500 ms (before)', undefined],
    ] as const) {
      log(`voice bench (d): early cut-in set, ${name}`);
      const results = await runCutInSet(eot);
      const early = results.filter((r) => r.early).length;
      const after = stats(results.flatMap((r) => (r.replyAfterMs === undefined ? [] : [r.replyAfterMs])));
      cutIn.push(`| ${name} | ${results.length} | ${early} (${fmt((100 * early) / results.length, 0)} %) | ${fmt(after.p50, 0)} / ${fmt(after.p90, 0)} |`);
    }
  }

  return [
    `Machine: ${machine()}. Real time, server in a child process, Node client in the bench process.`,
    '',
    '| run | turns | e2e p50 / p90 / p99 (ms, server) | p50 beyond the 500 ms end of turn (fixed in (b) only) | client-seen p50 / p90 (±20 ms) | asr p50 | tts p50 |',
    '|---|---|---|---|---|---|---|',
    ...rows,
    '',
    `Concurrent calls on instant fakes (each: ${options.turnsPerCall ?? 6} turns, 20 ms audio both ways, recording on): **${held}** held with p90 e2e < 1 s.`,
    '',
    '| calls | turns | e2e p50 / p90 / p99 (ms, server) | client-seen p50 / p90 | failed calls | wall | p90 < 1 s |',
    '|---|---|---|---|---|---|---|',
    ...levels,
    '',
    'Early cut-ins (d): sentences with a 400-700 ms pause in the middle, Flite kal16 in real time through fvad + PocketSphinx (in process, instant fake synthesis); an early reply is agent audio before the caller has finished.',
    '',
    '| end of turn | utterances | early replies | first agent audio after the end of speech, p50 / p90 (ms) |',
    '|---|---|---|---|',
    ...(cutIn.length > 0 ? cutIn : ['| skipped: pocketsphinx_continuous not installed | | | |']),
  ].join('\n');
}

if (process.argv[1] === SELF) {
  const i = process.argv.indexOf('--serve');
  if (i >= 0) await serve(process.argv[i + 1] === 'embedded' ? 'embedded' : 'fake');
  else process.stdout.write(`${await runVoiceBench()}\n`);
}
