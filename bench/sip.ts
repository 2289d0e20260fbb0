/**
 * `npm run bench -- sip` (issue 24): the SIP endpoint.
 * - INVITE to 200 OK of an inbound call with no inbound webhook (target p50 < 50 ms), against the
 *   same socket's OPTIONS round trip (no admission) as the baseline, in the same run.
 * - Concurrent SIP calls on the instant fakes (target >= 200): that many calls set up at once,
 *   each answered, ongoing, and sending the agent's RTP to its caller.
 * The server runs in this process over SQLite; callers are raw UDP sockets speaking SIP and RTP.
 */
import dgram from 'node:dgram';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSilentLogger } from '../src/lib/logger.ts';
import { fmt, machine, percentile } from './lib.ts';

type Log = (line: string) => void;

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

export async function runSipBench(options: { log: Log; calls?: number; concurrent?: number }): Promise<string> {
  const { runtime, app, close } = await startSipBenchServer('sb-bench-sip-', { SIP_INVITES_PER_MINUTE: '100000', SIP_RTP_PORT_MIN: '44000', SIP_RTP_PORT_MAX: '46000' });
  const sip = app.transports.get('sip') as unknown as { ready: Promise<void>; port: number; dialogCount: number };
  await sip.ready;
  const account = await runtime.services.accounts.createAccount({ trialEndsAt: null, rateLimitPerMinute: 10_000_000 });
  const flow = await runtime.services.agents.createFlow(account.account_id, { start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello, how can I help you today?' } }] } as never);
  const agent = await runtime.services.agents.createAgent(account.account_id, { response_engine: { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id } } as never);
  await runtime.services.phoneNumbers.importNumber(account.account_id, { phone_number: '+14155550100', inbound_agent_id: agent.agent_id });
  const uri = `sip:+14155550100@127.0.0.1:${sip.port}`;

  // 1. INVITE -> 200 OK, sequential calls, each ended with BYE; OPTIONS round trips as the baseline.
  const calls = options.calls ?? 60;
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
  const concurrent = options.concurrent ?? 200;
  const parties = await Promise.all(Array.from({ length: concurrent }, async () => ({ signal: await udp(), rtp: await udp() })));
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
  const answeredCount = tags.filter((t) => t !== undefined).length;
  const withAudio = parties.filter((p) => p.rtp.received.length >= 50).length;
  const live = sip.dialogCount;
  parties.forEach((p, i) => p.signal.socket.send(request('BYE', uri, p.signal.port, `con-${i}`, [`tag=${tags[i]}`]), sip.port, '127.0.0.1'));
  await waitFor(() => (sip.dialogCount === 0 ? true : undefined), 10_000);
  for (const p of parties) {
    p.signal.socket.close();
    p.rtp.socket.close();
  }
  options.log(`sip: ${answeredCount}/${concurrent} answered (${answered ? 'all' : 'not all'}) in ${fmt(setupMs, 0)} ms, ${withAudio} with >= 1 s of agent audio, ${live} live`);
  await close();

  return [
    `Machine: ${machine()}; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} at the end.`,
    '',
    '| what | result | baseline (same run) | target |',
    '|---|---|---|---|',
    `| INVITE to 200 OK, inbound, no inbound webhook (${calls} calls, one at a time) | p50 ${fmt(percentile(inviteMs, 50))} ms, p90 ${fmt(percentile(inviteMs, 90))} ms | OPTIONS round trip p50 ${fmt(percentile(optionsMs, 50))} ms | p50 < 50 ms |`,
    `| concurrent SIP calls on the instant fakes | ${answeredCount}/${concurrent} answered (set-up of all ${fmt(setupMs, 0)} ms), ${withAudio} receiving the agent's RTP (>= 50 packets in 5 s), ${live} dialogs live | - | >= 200 |`,
  ].join('\n');
}
