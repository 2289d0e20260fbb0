/**
 * WebRTC under loss, recognised (issue 23's "calls right under 5 % loss and 40 ms jitter"): the
 * README's flow (greet; the keywords "appointment"/"book" go to `book`, anything else to `bye`) on
 * the embedded engines, called over WebRTC by the Node client through the tests' userland UDP
 * relay. The caller says "I would like to book an appointment" (Flite's kal16 voice) after the
 * greeting; a call is right when the flow moves to `book`. The same calls run through the relay
 * at 0 % loss (the baseline) and at 5 % loss with up to 40 ms of jitter on the RTP, alternating,
 * in the same run: what differs is the network, not the recogniser.
 *
 * `node bench/webrtc-loss.ts [calls per network]` runs it alone.
 */
import { fileURLToPath } from 'node:url';
import { WebCallClient } from '../src/client/web-call-client.ts';
import { FliteTts } from '../src/providers/flite/flite.tts.ts';
import { concat, silence } from '../test/voice/harness.ts';
import { UdpRelay, seeded } from '../test/media/udp-relay.ts';
import { machine } from './lib.ts';
import { type Served, startServed } from './voice.ts';

const SAID = 'I would like to book an appointment';
const FLOW = {
  start_node_id: 'greet',
  nodes: [
    {
      id: 'greet',
      type: 'conversation',
      instruction: { type: 'static_text', text: 'Hello, thanks for calling. How can I help?' },
      edges: [
        { id: 'to_book', destination_node_id: 'book', transition_condition: { type: 'keyword', keywords: ['appointment', 'book'] } },
        { id: 'else', destination_node_id: 'bye', transition_condition: { type: 'always' } },
      ],
    },
    { id: 'book', type: 'end', instruction: { type: 'static_text', text: 'You are booked. Goodbye.' } },
    { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Goodbye.' } },
  ],
};

interface Network {
  name: string;
  loss: number;
  jitterMs: number;
}
const NETWORKS: Network[] = [
  { name: '0 % loss (baseline)', loss: 0, jitterMs: 0 },
  { name: '5 % loss, 40 ms jitter', loss: 0.05, jitterMs: 40 },
];

interface Outcome {
  right: boolean;
  node: string;
  lost: number | null;
  packets: number | null;
  dropped: number;
}

async function api(s: Served, route: string, body: unknown): Promise<Record<string, string>> {
  const res = await fetch(`${s.baseUrl}${route}`, { method: 'POST', headers: { authorization: `Bearer ${s.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${route}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, string>;
}

async function speech(): Promise<Int16Array> {
  const tts = new FliteTts();
  const parts: Int16Array[] = [];
  for await (const c of tts.synthesize(SAID, { voiceId: 'flite-kal16' })) parts.push(c);
  await tts.close();
  return concat(...parts, silence(1_500));
}

async function call(s: Served, agentId: string, said: Int16Array, network: Network, seed: number): Promise<Outcome> {
  const relay = new UdpRelay({ loss: network.loss, jitterMs: network.jitterMs, random: seeded(seed) });
  relay.armed = false; // the call connects on a clean network; the caller's speech meets the loss
  try {
    const created = await api(s, '/v2/create-web-call', { agent_id: agentId });
    const client = await WebCallClient.join({
      url: s.baseUrl,
      accessToken: created['access_token']!,
      transport: 'webrtc',
      iceAddress: '127.0.0.1',
      timeoutMs: 30_000,
      rewriteSdp: (sdp, type) => relay.rewrite(sdp, type === 'offer' ? 'client' : 'server'),
    });
    await client.waitFor('agent_stop_talking', 20_000);
    relay.armed = true;
    await client.play(said);
    const moved = await client.waitFor((e) => e.type === 'node_transition' && e.from === 'greet', 40_000).catch(() => null);
    relay.armed = false;
    await client.ended.catch(() => null);
    const stored = (await (await fetch(`${s.baseUrl}/v2/get-call/${created['call_id']}`, { headers: { authorization: `Bearer ${s.apiKey}` } })).json()) as { media: { packets_lost: number; packets_in: number } | null; transcript?: string };
    const node = moved?.type === 'node_transition' ? moved.to : `none (${JSON.stringify(stored.transcript ?? '')})`;
    return { right: node === 'book', node, lost: stored.media?.packets_lost ?? null, packets: stored.media?.packets_in ?? null, dropped: relay.counts.droppedTo['server'] ?? 0 };
  } finally {
    relay.close();
  }
}

export async function runWebRtcLossBench(options: { calls?: number; log?: (line: string) => void } = {}): Promise<string> {
  const log = options.log ?? (() => undefined);
  const calls = options.calls ?? 10;
  const said = await speech();
  const s = await startServed('embedded');
  const by = new Map<string, Outcome[]>(NETWORKS.map((n) => [n.name, []]));
  try {
    const flow = await api(s, '/create-conversation-flow', FLOW);
    const agent = await api(s, '/create-agent', { agent_name: 'Loss bench', response_engine: { type: 'conversation_flow', conversation_flow_id: flow['conversation_flow_id'] } });
    // One call first, not counted: the recogniser's first stream loads its model.
    log(`# webrtc loss bench: warm-up call: ${(await call(s, agent['agent_id']!, said, NETWORKS[0]!, 1)).node}`);
    for (let i = 0; i < calls; i++) {
      for (const network of NETWORKS) {
        const outcome = await call(s, agent['agent_id']!, said, network, 23 + i);
        by.get(network.name)!.push(outcome);
        log(`# webrtc loss bench: ${network.name}, call ${i + 1}/${calls}: ${outcome.node} (relay dropped ${outcome.dropped} caller packets, server counted ${outcome.lost} lost)`);
      }
    }
  } finally {
    await s.stop();
  }
  const out = [`Machine: ${machine()}`, '', `| network (caller's RTP) | calls | branch right | caller packets dropped by the relay | server's packets_lost |`, '|---|---|---|---|---|'];
  for (const [name, outcomes] of by) {
    const sum = (pick: (o: Outcome) => number | null) => outcomes.reduce((a, o) => a + (pick(o) ?? 0), 0);
    out.push(`| ${name} | ${outcomes.length} | ${outcomes.filter((o) => o.right).length}/${outcomes.length} | ${sum((o) => o.dropped)} | ${sum((o) => o.lost)} |`);
  }
  return out.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const calls = Number(process.argv[2]) || undefined;
  process.stdout.write(`${await runWebRtcLossBench({ ...(calls ? { calls } : {}), log: (l) => process.stderr.write(`${l}\n`) })}\n`);
}
