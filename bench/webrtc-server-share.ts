/**
 * The server's share of WebRTC's reply latency (issue 23), without a browser: the Node client
 * (src/client) speaks the same caller phrases as the browser bench (CALLER_PHRASES, Flite rms) to
 * the real server (`node src/main.ts`, the embedded engines), once over the WebSocket and once over
 * WebRTC, in alternating calls on one server. The audio is the same PCM on both: what differs is
 * only the transport and the server's receive and send paths (Opus, SRTP, the RTP timeline, the
 * silence fill). Per transport, the server's own trace of each reply (the `turn timing` of its
 * debug log, as the browser bench reads it), the client-seen reply latency (the phrase's last voiced
 * frame sent -> the first agent audio received) and the server's CPU over the calls.
 *
 * In Chromium the two transports also differ in what the browser does (its audio processing, its
 * Opus encoder and pacer, its CPU on the same machine): the browser bench measures that whole.
 *
 * `node bench/webrtc-server-share.ts [rounds]` runs it alone (a round is one call of each).
 */
import { fileURLToPath } from 'node:url';
import { WebCallClient } from '../src/client/web-call-client.ts';
import { FliteTts } from '../src/providers/flite/flite.tts.ts';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../test/voice/capabilities.ts';
import { startWebServer } from '../test/browser/server.ts';
import { concat } from '../test/voice/harness.ts';
import { type CpuShare, cpuSince, cpuSnapshot, serverTurnBreakdown } from './browser.ts';
import { CALLER_PHRASES } from './recognition.ts';
import { voicedEndMs } from './voice.ts';
import { fmt, machine, percentile } from './lib.ts';

/** Silence after each phrase, ms: the reply (Flite's "Okay.") plays within it. */
const GAP_MS = 2500;

async function phrases(): Promise<Int16Array[]> {
  const tts = new FliteTts();
  try {
    const out: Int16Array[] = [];
    for (const phrase of CALLER_PHRASES) {
      const parts: Int16Array[] = [];
      for await (const chunk of tts.synthesize(phrase.text, { voiceId: 'flite-rms' })) parts.push(chunk);
      out.push(concat(...parts));
    }
    return out;
  } finally {
    await tts.close();
  }
}

interface Measure {
  transport: 'websocket' | 'webrtc';
  callId: string;
  cpu?: CpuShare;
  /** Client-seen reply latency per phrase, ms. */
  client: number[];
}

export async function runWebRtcServerShareBench(options: { rounds?: number; log?: (line: string) => void } = {}): Promise<string> {
  const log = options.log ?? (() => {});
  const rounds = options.rounds ?? 2;
  const title = "### The server's share of WebRTC's reply latency, Node client, same audio both ways (`npm run bench -- webrtc-server-share`)";
  if (!hasPocketsphinx()) return `${title}\n\nSkipped: ${NO_POCKETSPHINX}.`;
  const spoken = await phrases();
  // At debug level the server logs each reply's `turn timing` (src/voice/turn-trace.ts).
  const web = await startWebServer({ LOG_LEVEL: 'debug' });
  const measures: Measure[] = [];
  const started = new Date();
  try {
    const flow = await web.api('POST', '/create-conversation-flow', {
      start_node_id: 'loop',
      nodes: [{ id: 'loop', type: 'conversation', instruction: { type: 'static_text', text: 'Okay.' } }],
    });
    const agent = await web.api('POST', '/create-agent', { agent_name: 'Server share', response_engine: { type: 'conversation_flow', conversation_flow_id: flow.json.conversation_flow_id } });
    if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${JSON.stringify(agent.json)}`);
    for (let round = 0; round < rounds; round++) {
      for (const transport of ['websocket', 'webrtc'] as const) {
        const created = await web.api('POST', '/v2/create-web-call', { agent_id: agent.json.agent_id });
        if (created.status !== 201) throw new Error(`create-web-call: ${created.status} ${JSON.stringify(created.json)}`);
        const cpu = cpuSnapshot(web.server.child.pid);
        const client = await WebCallClient.join({ url: web.baseUrl, accessToken: created.json.access_token, timeoutMs: 30_000, transport, ...(transport === 'webrtc' ? { iceAddress: '127.0.0.1' } : {}) });
        const measure: Measure = { transport, callId: created.json.call_id, client: [] };
        try {
          await client.waitFor((e) => e.type === 'agent_stop_talking', 15_000); // the greeting
          for (const pcm of spoken) {
            const playAt = client.now();
            await client.play(concat(pcm, new Int16Array((GAP_MS * 16_000) / 1000)));
            const voicedEnd = playAt + voicedEndMs(pcm);
            const reply = client.agentAudio.find((a) => a.atMs > voicedEnd);
            if (reply) measure.client.push(reply.atMs - voicedEnd);
          }
          await client.hangup();
        } catch (error) {
          client.drop();
          throw error;
        }
        await client.ended;
        measure.cpu = cpuSince(cpu, web.server.child.pid);
        measures.push(measure);
        log(`webrtc-server-share: round ${round + 1}, ${transport}: ${measure.client.length} of ${spoken.length} phrases answered`);
      }
    }
    const byTransport = (t: Measure['transport']) => measures.filter((m) => m.transport === t);
    const clientSeen = (t: Measure['transport']) => {
      const values = byTransport(t).flatMap((m) => m.client).sort((a, b) => a - b);
      return { p50: percentile(values, 50), p90: percentile(values, 90), n: values.length };
    };
    const ws = clientSeen('websocket');
    const rtc = clientSeen('webrtc');
    const serverCores = (t: Measure['transport']) => {
      const calls = byTransport(t).flatMap((m) => (m.cpu ? [m.cpu.serverCores] : []));
      return calls.length > 0 ? calls.reduce((a, b) => a + b, 0) / calls.length : NaN;
    };
    // The server's trace per call (a column each), without its per-turn lines.
    const breakdown = serverTurnBreakdown(web.server.lines, measures).filter((line) => !line.startsWith('- '));
    return [
      title,
      '',
      `${started.toISOString().slice(0, 16).replace('T', ' ')} UTC, ${machine()}; ${rounds} calls a transport, alternating, ${spoken.length} phrases a call (Flite rms), ${GAP_MS} ms apart.`,
      '',
      '| transport | client-seen reply p50 / p90 (phrases) | server CPU over the call, cores |',
      '|---|---|---|',
      `| websocket | ${fmt(ws.p50, 0)} / ${fmt(ws.p90, 0)} (${ws.n}) | ${fmt(serverCores('websocket'), 3)} |`,
      `| webrtc | ${fmt(rtc.p50, 0)} / ${fmt(rtc.p90, 0)} (${rtc.n}) | ${fmt(serverCores('webrtc'), 3)} |`,
      '',
      `Client-seen p50, WebRTC minus WebSocket: **${fmt(Math.round(rtc.p50 - ws.p50) || 0, 0)} ms**.`,
      '',
      ...breakdown,
    ].join('\n');
  } finally {
    await web.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(await runWebRtcServerShareBench({ rounds: Number(process.argv[2] ?? 2), log: (line) => console.error(line) }));
}
