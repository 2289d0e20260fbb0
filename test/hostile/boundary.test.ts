// The per-call error boundary: an error raised while serving one call ends that call
// (`error_unknown`, the client told, the log and /metrics naming the part that failed) and never
// the process; the process-wide handlers main.ts installs find a stray error's call by its async
// context, and an error outside any call is logged and counted with the process still up.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT } from '../helpers/process.ts';
import { realScheduler } from '../../src/lib/scheduler.ts';
import { CallSession, DEFAULT_SESSION_TIMINGS } from '../../src/media/call-session.ts';
import { type MediaServer, capturingLogger, fakeProviders, metricValue, recordingWebCallEndpoint, startMediaServer } from '../media/helpers.ts';

describe('the per-call error boundary', () => {
  let s: MediaServer;
  const { logger, lines } = capturingLogger();
  before(async () => {
    s = await startMediaServer('sqlite', { providers: fakeProviders([], { msPerChar: 2 }), logger });
  });
  after(async () => {
    await s?.close();
  });

  it("an error thrown in a callback into one call ends that call error_unknown; the other call and the server go on", { timeout: 20_000 }, async () => {
    const agentId = await s.flowAgent({ start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello.' } }] });
    const victim = await s.call(agentId);
    const other = await s.call(agentId);
    const session = s.runtime.media.sessions.get(victim.callId);
    assert.ok(session, 'the call runs here');
    // What a transport's handler does with a client's message, failing as a bug would.
    const handler = session.guard('transport_message', () => {
      throw new TypeError('a bug in a handler');
    });
    assert.doesNotThrow(() => handler(), 'the guard keeps the error from the event loop');
    const end = await victim.ended;
    assert.equal(end.disconnection_reason, 'error_unknown');
    assert.ok(victim.events.some((e) => e.type === 'error' && e['code'] === 'error_unknown'), 'the client was told');
    const call = (await s.api('GET', `/v2/get-call/${victim.callId}`)).json;
    assert.equal(call.call_status, 'error');
    assert.equal(call.disconnection_reason, 'error_unknown');
    assert.equal(await metricValue(s.baseUrl, 'switchboard_call_crashes_total', { where: 'transport_message' }), 1);
    const logged = lines.find((l) => l['msg'] === 'call failed on an unexpected error: it ends, the server goes on');
    assert.equal(logged?.['callId'], victim.callId, 'the log names the call');
    assert.equal(logged?.['where'], 'transport_message');
    assert.ok((await other.ping()) < 2_000, 'the other call answers');
    assert.equal((await other.hangup()).disconnection_reason, 'user_hangup');
  });

  it('an endpoint that throws while told the agent speaks: the call ends error_unknown, not error_asr', { timeout: 20_000 }, async () => {
    const agentId = await s.flowAgent({ start_node_id: 'hi', nodes: [{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hello.' } }] });
    const created = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
    const { call, agent } = await s.runtime.services.lifecycle.joinCall(created.json.access_token);
    const sent: string[] = [];
    // An endpoint with a bug: it throws on one event, inside a listener the pipeline's timer calls.
    const { endpoint } = recordingWebCallEndpoint();
    const send = endpoint.send.bind(endpoint);
    endpoint.send = (event) => {
      sent.push(event.type);
      if (event.type === 'agent_talking') throw new TypeError('a transport bug');
      send(event);
    };
    const end = endpoint.end.bind(endpoint);
    endpoint.end = (ending) => {
      sent.push('ended');
      end(ending);
    };
    const session = new CallSession(call, agent, endpoint, {
      calls: s.runtime.services.lifecycle,
      providers: fakeProviders([], { msPerChar: 2 }),
      recordings: s.runtime.services.recordings,
      log: logger.child({ callId: call.call_id }),
      timings: DEFAULT_SESSION_TIMINGS,
      scheduler: realScheduler,
      crashes: s.runtime.metrics.counter('switchboard_call_crashes_total', 'test', ['where']),
    });
    await session.start();
    await session.done;
    const stored = (await s.api('GET', `/v2/get-call/${call.call_id}`)).json;
    assert.equal(stored.disconnection_reason, 'error_unknown');
    assert.ok(sent.includes('ended'), `the endpoint was told the call ended: ${sent.join(', ')}`);
    assert.equal(await metricValue(s.baseUrl, 'switchboard_call_crashes_total', { where: 'endpoint_agent_talking' }), 1);
  });
});

describe('the process guard of main.ts', () => {
  it('a timer that throws and a promise that rejects inside a call end that call; one outside any call is counted; the process lives', { timeout: 20_000 }, async () => {
    const child = spawn(process.execPath, [path.join(ROOT, 'test/hostile/guard-child.ts')], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assert.equal(code, 0, `the child exited ${code}: ${err}`);
    const crashes = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { callId: string; where: string; message: string });
    assert.deepEqual(
      crashes.sort((a, b) => a.callId.localeCompare(b.callId)),
      [
        { callId: 'call_a', where: 'uncaught_exception', message: 'thrown in a timer of call a' },
        { callId: 'call_b', where: 'unhandled_rejection', message: 'rejected in call b' },
      ],
    );
    assert.match(out, /switchboard_uncaught_errors_total\{kind="exception",scope="process"\} 1/);
    assert.match(out, /switchboard_uncaught_errors_total\{kind="exception",scope="call"\} 1/);
    assert.match(out, /switchboard_uncaught_errors_total\{kind="rejection",scope="call"\} 1/);
  });
});
