/**
 * `npm run bench -- sip` (issue 24): the SIP endpoint.
 * - INVITE to 200 OK of an inbound call with no inbound webhook (target p50 < 50 ms), against the
 *   same socket's OPTIONS round trip (no admission) as the baseline, in the same run.
 * - Concurrent SIP calls on the instant fakes (target >= 200): that many calls set up at once,
 *   each answered, ongoing, and sending the agent's RTP to its caller, held 5 s; the calls that
 *   ended during the hold are listed by reason, beside the event loop's longest stall (a call
 *   ends `client_disconnected` when its caller's audio has not been read for 5 s: a stall that
 *   long, not a silent caller, is what ends calls under load).
 * - The server's own added latency on a SIP call (target <= 20 ms at p50): the reply latency of a
 *   turn (end of the caller's speech to the first agent audio) over SIP, against the same agent
 *   over the web-call WebSocket, turns alternating between the two in the same run.
 * The server runs in this process over SQLite; callers are raw UDP sockets speaking SIP and RTP.
 */
import dgram from 'node:dgram';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createSilentLogger } from '../src/lib/logger.ts';
import { decodeMulaw, encodeMulaw } from '../src/media/codec/mulaw.ts';
import { fakeProviders, startMediaServer } from '../test/media/helpers.ts';
import { fmt, machine, percentile } from './lib.ts';
import { FLOW, TONE_MS, openWebCall } from './twilio.ts';

type Log = (line: string) => void;

/** A size of the run from the environment (a small run to check the bench: SIP_BENCH_CALLS=10 SIP_BENCH_CONCURRENT=20 SIP_BENCH_TURNS=4). */
function sized(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

async function udp(): Promise<{ socket: dgram.Socket; port: number; received: Buffer[] }> {
  const socket = dgram.createSocket('udp4');
  const received: Buffer[] = [];
  socket.on('message', (data) => received.push(data));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { socket, port: socket.address().port, received };
}

function request(method: string, uri: string, from: number, callId: string, extra: string[] = [], body = ''): Buffer {
  return Buffer.from(
    [
      `${method} ${uri} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${from};branch=z9hG4bK${callId}${method}`,
      'Max-Forwards: 70',
      `From: <sip:+14155550111@127.0.0.1:${from}>;tag=b1`,
      `To: <sip:+14155550100@127.0.0.1>${extra.find((h) => h.startsWith('tag=')) ? `;${extra.find((h) => h.startsWith('tag='))}` : ''}`,
      `Call-ID: ${callId}`,
      `CSeq: ${method === 'BYE' ? 2 : 1} ${method}`,
      `Contact: <sip:b@127.0.0.1:${from}>`,
      ...extra.filter((h) => !h.startsWith('tag=')),
      `Content-Length: ${Buffer.byteLength(body)}`,
      '',
      body,
    ].join('\r\n'),
  );
}

const sdp = (rtpPort: number) => ['v=0', 'o=b 1 1 IN IP4 127.0.0.1', 's=b', 'c=IN IP4 127.0.0.1', 't=0 0', `m=audio ${rtpPort} RTP/AVP 0`, 'a=rtpmap:0 PCMU/8000', ''].join('\r\n');

async function waitFor<T>(check: () => T | undefined, timeoutMs: number): Promise<T | undefined> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (performance.now() > deadline) return undefined;
    await new Promise((r) => setImmediate(r));
  }
}

/**
 * A server with SIP on and speech engines that cost nothing (an instant recogniser, fake
 * synthesis), for the SIP benchmarks; `env` adds to its configuration.
 */
export async function startSipBenchServer(prefix: string, env: Record<string, string>) {
  const { loadConfig } = await import('../src/config/config.ts');
  const { createRuntime } = await import('../src/runtime.ts');
  const { buildApp } = await import('../src/app.ts');
  const { EnergyVad, FakeTts } = await import('../src/providers/fake/fake.providers.ts');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const config = loadConfig({ DATA_DIR: dataDir, PORT: '0', WEBHOOK_WORKER: 'false', LOG_LEVEL: 'warn', SIP_PORT: '0', ...env });
  const providers = {
    llm: undefined,
    stt: { id: 'instant', languages: () => ['en-US'], openStream: async () => ({ write() {}, finalize: async () => ({ text: 'hello' }), close: async () => {} }) },
    tts: new FakeTts({ msPerChar: 60 }),
    vad: new EnergyVad(),
    close: async () => {},
  };
  const runtime = await createRuntime(config, { logger: createSilentLogger(), providers });
  const app = await buildApp(runtime);
  const close = async () => {
    await app.close();
    await runtime.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  return { runtime, app, close };
}

export async function runSipBench(options: { log: Log; calls?: number; concurrent?: number; turns?: number }): Promise<string> {
  options.log('sip bench (a): reply latency over SIP against the web-call WebSocket, alternating turns');
  const latency = await replyLatency(options.turns ?? sized('SIP_BENCH_TURNS', 12));
  const { runtime, app, close } = await startSipBenchServer('sb-bench-sip-', { SIP_INVITES_PER_MINUTE: '100000', SIP_RTP_PORT_MIN: '44000', SIP_RTP_PORT_MAX: '46000' });
  const sip = app.transports.get('sip') as unknown as { ready: Promise<void>; port: number; dialogCount: number };
  await sip.ready;
  const account = await runtime.services.accounts.createAccount({ trialEndsAt: null, rateLimitPerMinute: 10_000_000 });
  const flow = await runtime.services.agents.createFlow(account.account_id, { start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello, how can I help you today?' } }] } as never);
  const agent = await runtime.services.agents.createAgent(account.account_id, { response_engine: { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id } } as never);
  await runtime.services.phoneNumbers.importNumber(account.account_id, { phone_number: '+14155550100', inbound_agent_id: agent.agent_id });
  const uri = `sip:+14155550100@127.0.0.1:${sip.port}`;

  // 1. INVITE -> 200 OK, sequential calls, each ended with BYE; OPTIONS round trips as the baseline.
  const calls = options.calls ?? sized('SIP_BENCH_CALLS', 60);
  const inviteMs: number[] = [];
  const optionsMs: number[] = [];
  const caller = await udp();
  const media = await udp();
  for (let i = 0; i < calls; i++) {
    caller.received.length = 0;
    let t0 = performance.now();
    caller.socket.send(request('OPTIONS', uri, caller.port, `opt-${i}`), sip.port, '127.0.0.1');
    await waitFor(() => caller.received.find((m) => m.toString('latin1').startsWith('SIP/2.0 200')), 5_000);
    optionsMs.push(performance.now() - t0);
    caller.received.length = 0;
    t0 = performance.now();
    caller.socket.send(request('INVITE', uri, caller.port, `inv-${i}`, ['Content-Type: application/sdp'], sdp(media.port)), sip.port, '127.0.0.1');
    const ok = await waitFor(() => caller.received.find((m) => m.toString('latin1').startsWith('SIP/2.0 200')), 5_000);
    inviteMs.push(performance.now() - t0);
    const tag = ok ? /To: [^\r]*;tag=([^;\r]+)/.exec(ok.toString('latin1'))?.[1] : undefined;
    caller.socket.send(request('ACK', uri, caller.port, `inv-${i}`, [`tag=${tag}`]), sip.port, '127.0.0.1');
    caller.socket.send(request('BYE', uri, caller.port, `inv-${i}`, [`tag=${tag}`]), sip.port, '127.0.0.1');
    await waitFor(() => (sip.dialogCount === 0 ? true : undefined), 5_000);
  }
  caller.socket.close();
  media.socket.close();
  await new Promise((r) => setTimeout(r, 500));
  inviteMs.sort((a, b) => a - b);
  optionsMs.sort((a, b) => a - b);
  options.log(`sip: INVITE->200 p50 ${fmt(percentile(inviteMs, 50))} ms, OPTIONS p50 ${fmt(percentile(optionsMs, 50))} ms`);

  // 2. Concurrent calls: all set up at once, held 5 s, each must be answered and receive the agent's RTP.
  const concurrent = options.concurrent ?? sized('SIP_BENCH_CONCURRENT', 200);
  const parties = await Promise.all(Array.from({ length: concurrent }, async () => ({ signal: await udp(), rtp: await udp() })));
  const stalls = monitorEventLoopDelay({ resolution: 10 });
  stalls.enable();
  const started = performance.now();
  const invite = (p: (typeof parties)[number], i: number) => p.signal.socket.send(request('INVITE', uri, p.signal.port, `con-${i}`, ['Content-Type: application/sdp'], sdp(p.rtp.port)), sip.port, '127.0.0.1');
  parties.forEach(invite);
  // As a phone does (RFC 3261 timer A): the INVITE again every 500 ms until a response, since a
  // burst of datagrams may overflow a socket's receive buffer.
  // Each caller sends its own audio as a phone does, from its answer on (silence, in 100 ms
  // packets to spare this shared machine): a call without caller audio ends client_disconnected after 5 s.
  const serverPort = (p: (typeof parties)[number]) => Number(/m=audio ([0-9]+) /.exec(p.signal.received.find((m) => m.toString('latin1').startsWith('SIP/2.0 200'))?.toString('latin1') ?? '')?.[1]);
  let seq = 0;
  const talk = setInterval(() => {
    seq += 1;
    parties.forEach((p, i) => {
      const port = serverPort(p);
      if (!port) return;
      const packet = Buffer.alloc(12 + 800, 0xff);
      packet[0] = 0x80;
      packet[1] = 0;
      packet.writeUInt16BE(seq & 0xffff, 2);
      packet.writeUInt32BE(seq * 800, 4);
      packet.writeUInt32BE(i + 1, 8);
      p.rtp.socket.send(packet, port, '127.0.0.1');
    });
  }, 100);
  const retransmit = setInterval(() => parties.forEach((p, i) => p.signal.received.length === 0 && invite(p, i)), 500);
  const answered = await waitFor(() => (parties.every((p) => p.signal.received.some((m) => m.toString('latin1').startsWith('SIP/2.0 200'))) ? true : undefined), 30_000);
  const setupMs = performance.now() - started;
  clearInterval(retransmit);
  const tags = parties.map((p) => /To: [^\r]*;tag=([^;\r]+)/.exec(p.signal.received.find((m) => m.toString('latin1').startsWith('SIP/2.0 200'))?.toString('latin1') ?? '')?.[1]);
  parties.forEach((p, i) => p.signal.socket.send(request('ACK', uri, p.signal.port, `con-${i}`, [`tag=${tags[i]}`]), sip.port, '127.0.0.1'));
  await new Promise((r) => setTimeout(r, 5_000));
  clearInterval(talk);
  stalls.disable();
  const answeredCount = tags.filter((t) => t !== undefined).length;
  const withAudio = parties.filter((p) => p.rtp.received.length >= 50).length;
  const live = sip.dialogCount;
  // The calls that ended during the hold, by reason (the event loop's longest stall beside them).
  const rows = await runtime.services.calls.listCalls(account.account_id, { limit: 1000 });
  const endedEarly = new Map<string, number>();
  for (const row of rows) {
    if (!String(row.telephony_identifier ?? '').startsWith('con-') || row.call_status !== 'ended') continue;
    const reason = String(row.disconnection_reason);
    endedEarly.set(reason, (endedEarly.get(reason) ?? 0) + 1);
  }
  const early = [...endedEarly].map(([reason, n]) => `${n} ${reason}`).join(', ') || 'none';
  const stallMs = stalls.max / 1e6;
  parties.forEach((p, i) => p.signal.socket.send(request('BYE', uri, p.signal.port, `con-${i}`, [`tag=${tags[i]}`]), sip.port, '127.0.0.1'));
  await waitFor(() => (sip.dialogCount === 0 ? true : undefined), 10_000);
  for (const p of parties) {
    p.signal.socket.close();
    p.rtp.socket.close();
  }
  options.log(`sip: ${answeredCount}/${concurrent} answered (${answered ? 'all' : 'not all'}) in ${fmt(setupMs, 0)} ms, ${withAudio} with >= 1 s of agent audio, ${live} live; ended during the hold: ${early}; longest event-loop stall ${fmt(stallMs, 0)} ms`);
  await close();

  return [
    `Machine: ${machine()}; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} at the end.`,
    '',
    '| what | result | baseline (same run) | target |',
    '|---|---|---|---|',
    `| INVITE to 200 OK, inbound, no inbound webhook (${calls} calls, one at a time) | p50 ${fmt(percentile(inviteMs, 50))} ms, p90 ${fmt(percentile(inviteMs, 90))} ms | OPTIONS round trip p50 ${fmt(percentile(optionsMs, 50))} ms | p50 < 50 ms |`,
    `| concurrent SIP calls on the instant fakes, held 5 s | ${answeredCount}/${concurrent} answered (set-up of all ${fmt(setupMs, 0)} ms), ${withAudio} receiving the agent's RTP (>= 50 packets in 5 s), ${live} dialogs live at the end; ended during the hold: ${early}; longest event-loop stall from set-up to the end of the hold ${fmt(stallMs, 0)} ms | - | >= 200 |`,
    `| reply latency of a turn over SIP (end of speech to first agent audio, ${latency.sip.length} turns) | p50 ${fmt(percentile(latency.sip, 50), 0)} ms, p90 ${fmt(percentile(latency.sip, 90), 0)} ms | the same agent over the web-call WebSocket: p50 ${fmt(percentile(latency.web, 50), 0)} ms, p90 ${fmt(percentile(latency.web, 90), 0)} ms | |`,
    `| the server's own added latency on a SIP call (p50 difference) | **${fmt(percentile(latency.sip, 50) - percentile(latency.web, 50), 0)} ms** | | <= 20 ms |`,
  ].join('\n');
}

/**
 * Reply latency over SIP and over the WebSocket on one agent, in one server (fake engines, the
 * energy VAD), turns alternating: each turn is TONE_MS of a 300 Hz tone, then silence at real time
 * until the agent's first audible packet. Sorted latencies, ms.
 */
async function replyLatency(turns: number): Promise<{ sip: number[]; web: number[] }> {
  const providers = fakeProviders([], { msPerChar: 10 });
  const s = await startMediaServer('sqlite', { providers, env: { SIP_PORT: '0', SIP_RTP_PORT_MIN: '44000', SIP_RTP_PORT_MAX: '46000' } });
  try {
    const sip = s.app.transports.get('sip') as unknown as { ready: Promise<void>; port: number };
    await sip.ready;
    const agentId = await s.flowAgent(FLOW);
    await s.api('POST', '/import-phone-number', { phone_number: '+14155550100', inbound_agent_id: agentId });
    providers.stt.push(...Array.from({ length: turns * 2 + 10 }, () => 'next'));
    const caller = await udp();
    const media = await udp();
    const uri = `sip:+14155550100@127.0.0.1:${sip.port}`;
    caller.socket.send(request('INVITE', uri, caller.port, 'lat-1', ['Content-Type: application/sdp'], sdp(media.port)), sip.port, '127.0.0.1');
    const ok = await waitFor(() => caller.received.find((m) => m.toString('latin1').startsWith('SIP/2.0 200')), 5_000);
    if (!ok) throw new Error('the SIP call was not answered');
    const tag = /To: [^\r]*;tag=([^;\r]+)/.exec(ok.toString('latin1'))?.[1];
    const serverRtp = Number(/m=audio ([0-9]+) /.exec(ok.toString('latin1'))?.[1]);
    caller.socket.send(request('ACK', uri, caller.port, 'lat-1', [`tag=${tag}`]), sip.port, '127.0.0.1');
    let seq = 0;
    const rtp = (payload: Uint8Array) => {
      seq += 1;
      const header = Buffer.alloc(12);
      header[0] = 0x80;
      header.writeUInt16BE(seq & 0xffff, 2);
      header.writeUInt32BE(seq * 160, 4);
      header.writeUInt32BE(4242, 8);
      media.socket.send(Buffer.concat([header, payload]), serverRtp, '127.0.0.1');
    };
    // An agent packet with sound in it (silence packets, if any, do not count as the reply).
    let audible = 0;
    media.socket.on('message', (data) => {
      const pcm = decodeMulaw(data.subarray(12));
      if (pcm.some((v) => Math.abs(v) > 500)) audible += 1;
    });
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const quiet = async () => {
      let seen = -1;
      while (seen !== audible) {
        seen = audible;
        for (let t = 0; t < 300; t += 20) {
          rtp(silence);
          await sleep(20);
        }
      }
    };
    const tone = encodeMulaw(Int16Array.from({ length: 160 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / 8000))));
    const silence = encodeMulaw(new Int16Array(160));
    await quiet();
    const sipTurn = async () => {
      for (let t = 0; t < TONE_MS; t += 20) {
        rtp(tone);
        await sleep(20);
      }
      const before = audible;
      const end = performance.now();
      while (audible === before) {
        rtp(silence);
        await sleep(20);
        if (performance.now() - end > 10_000) throw new Error('no reply over SIP');
      }
      const latency = performance.now() - end;
      await quiet();
      return latency;
    };
    const web = await openWebCall(s, agentId);
    const overSip: number[] = [];
    const overWeb: number[] = [];
    for (let i = 0; i < turns; i += 1) {
      overSip.push(await sipTurn());
      overWeb.push(await web.turn());
    }
    web.close();
    caller.socket.send(request('BYE', uri, caller.port, 'lat-1', [`tag=${tag}`]), sip.port, '127.0.0.1');
    await sleep(200);
    caller.socket.close();
    media.socket.close();
    return { sip: overSip.sort((a, b) => a - b), web: overWeb.sort((a, b) => a - b) };
  } finally {
    await s.close();
  }
}
