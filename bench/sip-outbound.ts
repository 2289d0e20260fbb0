/**
 * `npm run bench -- sip-outbound` (issue 24): outbound calls over a SIP trunk, against a local
 * answering UAS (a UDP socket here that answers every INVITE 200 OK with SDP at once).
 * - create-phone-call (real HTTP) to our INVITE on the wire, and to the call `ongoing` (the 2xx
 *   ACKed and the session started, polled through get-call);
 * - baseline, in the same run: register-phone-call's HTTP round trip, which registers the same
 *   call without placing it.
 * The server runs in this process over SQLite.
 */
import dgram from 'node:dgram';
import os from 'node:os';
import { fmt, machine, percentile } from './lib.ts';
import { startSipBenchServer } from './sip.ts';

type Log = (line: string) => void;

export async function runSipOutboundBench(options: { log: Log; calls?: number }): Promise<string> {
  const { runtime, app, close } = await startSipBenchServer('sb-bench-sipout-', { SIP_RTP_PORT_MIN: '46000', SIP_RTP_PORT_MAX: '47000', WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const sip = app.transports.get('sip') as unknown as { ready: Promise<void>; dialogCount: number };
  await sip.ready;
  const account = await runtime.services.accounts.createAccount({ trialEndsAt: null, rateLimitPerMinute: 10_000_000 });
  const post = async (route: string, body: unknown) => {
    const res = await fetch(base + route, { method: 'POST', headers: { authorization: `Bearer ${account.api_key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return (await res.json()) as Record<string, string>;
  };
  const flow = await runtime.services.agents.createFlow(account.account_id, { start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello.' } }] } as never);
  const agent = await runtime.services.agents.createAgent(account.account_id, { response_engine: { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id } } as never);

  // The answering UAS: 200 OK with SDP to every INVITE, 200 to BYE; notes when each INVITE arrived.
  const uas = dgram.createSocket('udp4');
  const rtp = dgram.createSocket('udp4');
  await Promise.all([new Promise<void>((r) => uas.bind(0, '127.0.0.1', r)), new Promise<void>((r) => rtp.bind(0, '127.0.0.1', r))]);
  const inviteAt = new Map<string, number>();
  const answers = new Map<string, { to: string; from: string; remote: dgram.RemoteInfo }>();
  uas.on('message', (data, remote) => {
    const text = data.toString('latin1');
    const header = (name: string) => new RegExp(`^${name}: (.*)$`, 'mi').exec(text)?.[1]?.trim() ?? '';
    const method = /^([A-Z]+) /.exec(text)?.[1];
    if (method !== 'INVITE' && method !== 'BYE') return;
    const callId = header('Call-ID');
    if (method === 'INVITE' && !inviteAt.has(callId)) inviteAt.set(callId, performance.now());
    const to = method === 'INVITE' ? `${header('To')};tag=uas` : header('To');
    const body = method === 'INVITE' ? ['v=0', 'o=u 1 1 IN IP4 127.0.0.1', 's=u', 'c=IN IP4 127.0.0.1', 't=0 0', `m=audio ${rtp.address().port} RTP/AVP 0`, 'a=rtpmap:0 PCMU/8000', ''].join('\r\n') : '';
    if (method === 'INVITE') answers.set(callId, { to, from: header('From'), remote });
    const lines = [
      'SIP/2.0 200 OK',
      ...text.split('\r\n').filter((l) => /^Via:/i.test(l)),
      `From: ${header('From')}`,
      `To: ${to}`,
      `Call-ID: ${callId}`,
      `CSeq: ${header('CSeq')}`,
      ...(method === 'INVITE' ? [`Contact: <sip:uas@127.0.0.1:${uas.address().port}>`, 'Content-Type: application/sdp'] : []),
      `Content-Length: ${Buffer.byteLength(body)}`,
      '',
      body,
    ];
    uas.send(Buffer.from(lines.join('\r\n')), remote.port, remote.address);
  });
  await runtime.services.phoneNumbers.importNumber(account.account_id, { phone_number: '+14155550100', outbound_agent_id: agent.agent_id, termination_uri: `127.0.0.1:${uas.address().port}` });

  const calls = options.calls ?? 40;
  const toInvite: number[] = [];
  const toOngoing: number[] = [];
  const registerMs: number[] = [];
  for (let i = 0; i < calls; i++) {
    let t0 = performance.now();
    await post('/v2/register-phone-call', { agent_id: agent.agent_id, from_number: '+14155550100', to_number: '+14155550177' });
    registerMs.push(performance.now() - t0);
    t0 = performance.now();
    const created = await post('/v2/create-phone-call', { from_number: '+14155550100', to_number: '+14155550177' });
    const callId = created['telephony_identifier'] ?? '';
    const deadline = performance.now() + 10_000;
    for (;;) {
      const call = await (await fetch(`${base}/v2/get-call/${created['call_id']}`, { headers: { authorization: `Bearer ${account.api_key}` } })).json();
      if ((call as { call_status: string }).call_status === 'ongoing') break;
      if (performance.now() > deadline) throw new Error('the call did not go ongoing');
    }
    toOngoing.push(performance.now() - t0);
    toInvite.push((inviteAt.get(callId) ?? Number.NaN) - t0);
    // The callee hangs up.
    const answer = answers.get(callId);
    if (answer) {
      const bye = [`BYE sip:x@127.0.0.1 SIP/2.0`, `Via: SIP/2.0/UDP 127.0.0.1:${uas.address().port};branch=z9hG4bKb${i}`, `From: ${answer.to}`, `To: ${answer.from}`, `Call-ID: ${callId}`, 'CSeq: 1 BYE', 'Content-Length: 0', '', ''].join('\r\n');
      uas.send(Buffer.from(bye), answer.remote.port, answer.remote.address);
    }
    const until = performance.now() + 5_000;
    while (sip.dialogCount > 0 && performance.now() < until) await new Promise((r) => setTimeout(r, 5));
  }
  uas.close();
  rtp.close();
  for (const list of [toInvite, toOngoing, registerMs]) list.sort((a, b) => a - b);
  options.log(`sip-outbound: to INVITE p50 ${fmt(percentile(toInvite, 50))} ms, to ongoing p50 ${fmt(percentile(toOngoing, 50))} ms, register-phone-call p50 ${fmt(percentile(registerMs, 50))} ms`);
  await close();
  return [
    `Machine: ${machine()}; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} at the end.`,
    '',
    '| what | p50 | p90 | baseline (same run) |',
    '|---|---|---|---|',
    `| create-phone-call (HTTP) to our INVITE at the trunk (${calls} calls, one at a time) | ${fmt(percentile(toInvite, 50))} ms | ${fmt(percentile(toInvite, 90))} ms | register-phone-call round trip p50 ${fmt(percentile(registerMs, 50))} ms, p90 ${fmt(percentile(registerMs, 90))} ms |`,
    `| create-phone-call to the call \`ongoing\` (a UAS answering at once; get-call polled) | ${fmt(percentile(toOngoing, 50))} ms | ${fmt(percentile(toOngoing, 90))} ms | |`,
  ].join('\n');
}
