/**
 * `npm run bench -- twilio`: calls through Twilio media streams against a local server speaking
 * Twilio's wire protocol (test/media/twilio/fake-twilio.ts), each figure beside its baseline in
 * the same run, on instant fake engines:
 *
 * - the voice webhook's answer (signature check, number look-up, TwiML), against an API request
 *   that reads the same number (GET /get-phone-number);
 * - the reply latency of a turn (end of the caller's speech to the first agent audio), on a Twilio
 *   stream against a web call on the same agent, turns alternating between the two: the
 *   difference is what the Twilio path adds (μ-law, resampling, base64 JSON);
 * - concurrent Twilio calls, each taking turns, with their reply latency.
 */
import { encodeMulaw } from '../src/media/codec/mulaw.ts';
import { twilioSignature } from '../src/media/twilio/signature.ts';
import { fakeProviders, rawJoin, startMediaServer } from '../test/media/helpers.ts';
import { type FakeStream, FakeTwilio } from '../test/media/twilio/fake-twilio.ts';
import { fmt, machine, percentile } from './lib.ts';

const PUBLIC = 'https://switchboard.example.com';
const NUMBER = '+14155550100';
/** Each turn: 400 ms of a tone (speech to the energy VAD), then silence until the reply. */
export const TONE_MS = 400;
export const FLOW = {
  start_node_id: 'a',
  nodes: [
    { id: 'a', type: 'conversation', instruction: { type: 'static_text', text: 'Hi.' }, edges: [{ id: 'ab', destination_node_id: 'b', transition_condition: { type: 'keyword', keywords: ['next'] } }] },
    { id: 'b', type: 'conversation', instruction: { type: 'static_text', text: 'Ok.' }, edges: [{ id: 'ba', destination_node_id: 'a', transition_condition: { type: 'keyword', keywords: ['next'] } }] },
  ],
};

export interface TwilioBenchOptions {
  log?: (line: string) => void;
  webhookRequests?: number;
  turns?: number;
  concurrent?: number[];
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p90: percentile(s, 90) };
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runTwilioBench(options: TwilioBenchOptions = {}): Promise<string> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const twilio = await new FakeTwilio().start();
  const providers = fakeProviders([], { msPerChar: 10 });
  const s = await startMediaServer('sqlite', { providers, env: { PUBLIC_BASE_URL: PUBLIC, TWILIO_API_BASE_URL: twilio.baseUrl } });
  const local = s.baseUrl;
  twilio.route = (url) => url.replace(PUBLIC, local).replace(PUBLIC.replace('https', 'wss'), local.replace('http', 'ws'));
  const rows: string[] = [];
  try {
    const agentId = await s.flowAgent(FLOW);
    await s.api('POST', '/import-phone-number', { phone_number: NUMBER, twilio_account_sid: twilio.accountSid, twilio_auth_token: twilio.authToken, inbound_agent_id: agentId });

    log('twilio bench (a): the voice webhook against an API read of the same number');
    const webhook: number[] = [];
    const api: number[] = [];
    for (let i = 0; i < (options.webhookRequests ?? 200); i += 1) {
      const params = { AccountSid: twilio.accountSid, CallSid: `CA${String(i).padStart(32, '0')}`, Direction: 'inbound', From: '+14155550123', To: NUMBER, CallStatus: 'ringing' };
      const body = new URLSearchParams(params).toString();
      let t = performance.now();
      const res = await fetch(`${local}/twilio/voice`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(twilio.authToken, `${PUBLIC}/twilio/voice`, params) }, body });
      await res.text();
      if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
      webhook.push(performance.now() - t);
      t = performance.now();
      await s.api('GET', '/get-phone-number/%2B14155550100');
      api.push(performance.now() - t);
    }
    const w = stats(webhook);
    const a = stats(api);
    rows.push(`| voice webhook to TwiML (signature, look-up, ticket) | ${w.n} | ${fmt(w.p50, 1)} / ${fmt(w.p90, 1)} ms |`);
    rows.push(`| baseline: GET /get-phone-number (API key, the same look-up) | ${a.n} | ${fmt(a.p50, 1)} / ${fmt(a.p90, 1)} ms |`);

    log('twilio bench (b): reply latency, a Twilio stream against a web call, alternating turns');
    const turns = options.turns ?? 12;
    providers.stt.push(...Array.from({ length: turns * 2 + 10 }, () => 'next'));
    const twilioCall = await openTwilioCall(twilio);
    const webCall = await openWebCall(s, agentId);
    const overTwilio: number[] = [];
    const overWeb: number[] = [];
    for (let i = 0; i < turns; i += 1) {
      overTwilio.push(await twilioCall.turn());
      overWeb.push(await webCall.turn());
    }
    twilioCall.stream.stop();
    webCall.close();
    const t = stats(overTwilio);
    const wc = stats(overWeb);
    rows.push(`| reply latency over a Twilio stream (end of speech to first agent audio) | ${t.n} | ${fmt(t.p50, 0)} / ${fmt(t.p90, 0)} ms |`);
    rows.push(`| baseline: the same agent over the web-call WebSocket | ${wc.n} | ${fmt(wc.p50, 0)} / ${fmt(wc.p90, 0)} ms |`);
    rows.push(`| what the Twilio path adds (p50 difference) | | **${fmt(t.p50 - wc.p50, 0)} ms** |`);

    for (const n of options.concurrent ?? [25, 50, 100]) {
      log(`twilio bench (c): ${n} concurrent Twilio calls`);
      providers.stt.push(...Array.from({ length: n * 4 }, () => 'next'));
      const started = performance.now();
      const results = await Promise.all(
        Array.from({ length: n }, async (_, i) => {
          await sleep((i * 1000) / n);
          try {
            const call = await openTwilioCall(twilio);
            const latencies = [await call.turn(), await call.turn(), await call.turn()];
            call.stream.stop();
            return latencies;
          } catch {
            return null;
          }
        }),
      );
      const failed = results.filter((r) => r === null).length;
      const l = stats(results.flatMap((r) => r ?? []));
      rows.push(`| ${n} concurrent Twilio calls, 3 turns each: failed, reply p50 / p90 | ${l.n} turns | ${failed} failed, ${fmt(l.p50, 0)} / ${fmt(l.p90, 0)} ms (${fmt((performance.now() - started) / 1000, 1)} s) |`);
    }
  } finally {
    await s.close();
    await twilio.close();
  }
  return [`Machine: ${machine()}`, '', '| what | n | p50 / p90 |', '|---|---|---|', ...rows].join('\n');
}

/** An inbound Twilio call whose greeting has played: `turn()` speaks and times the reply. */
async function openTwilioCall(twilio: FakeTwilio): Promise<{ stream: FakeStream; turn: () => Promise<number> }> {
  const { stream } = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: '+14155550123', to: NUMBER });
  if (!stream) throw new Error('no stream');
  const quiet = async () => {
    // The reply has been sent and played: no new media for 300 ms.
    let seen = -1;
    while (seen !== stream.sent('media').length) {
      seen = stream.sent('media').length;
      await sleep(300);
    }
  };
  await quiet();
  const tone = encodeMulaw(Int16Array.from({ length: 160 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / 8000))));
  const silence = encodeMulaw(new Int16Array(160));
  return {
    stream,
    async turn() {
      for (let t = 0; t < TONE_MS; t += 20) {
        stream.sendMedia(tone);
        await sleep(20);
      }
      const before = stream.sent('media').length;
      const end = performance.now();
      // Silence at real time until the reply's first audio.
      while (stream.sent('media').length === before) {
        stream.sendMedia(silence);
        await sleep(20);
        if (performance.now() - end > 10_000) throw new Error('no reply');
      }
      const latency = performance.now() - end;
      await quiet();
      return latency;
    },
  };
}

/** A web call on the same agent whose greeting has played: `turn()` speaks (16 kHz PCM) and times the reply. */
export async function openWebCall(s: Awaited<ReturnType<typeof startMediaServer>>, agentId: string): Promise<{ close: () => void; turn: () => Promise<number> }> {
  const created = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
  const client = await rawJoin(s.baseUrl, created.json.access_token);
  let audio = 0;
  client.ws.on('message', (_data, binary) => {
    if (binary) audio += 1;
  });
  const quiet = async () => {
    let seen = -1;
    while (seen !== audio) {
      seen = audio;
      await sleep(300);
    }
  };
  await quiet();
  const frame = (amplitude: number) => Buffer.from(Int16Array.from({ length: 320 }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * 300 * i) / 16000))).buffer);
  return {
    close: () => client.ws.close(1000),
    async turn() {
      for (let t = 0; t < TONE_MS; t += 20) {
        client.ws.send(frame(8000));
        await sleep(20);
      }
      const before = audio;
      const end = performance.now();
      while (audio === before) {
        client.ws.send(frame(0));
        await sleep(20);
        if (performance.now() - end > 10_000) throw new Error('no reply');
      }
      const latency = performance.now() - end;
      await quiet();
      return latency;
    },
  };
}
