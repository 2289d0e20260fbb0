// The caller's audio watchdog after the server's event loop stalled: Node runs due timers before it
// reads sockets, so a check made first thing after a stall would see the caller silent although
// their audio is waiting to be read. A caller in another process keeps sending through a stall
// longer than the audio timeout, and the call goes on.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { fakeProviders, startMediaServer, type MediaServer } from './helpers.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const AUDIO_TIMEOUT_MS = 1_500;

/** A caller in its own process: joins and sends its microphone's silence until killed. */
const CALLER = `
const { WebCallClient } = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, 'src/client/web-call-client.ts')).href)});
const [url, accessToken] = process.argv.slice(1);
await WebCallClient.join({ url, accessToken });
process.stdout.write('joined\\n');
`;

describe('the audio watchdog after an event-loop stall', () => {
  let s: MediaServer;
  before(async () => {
    s = await startMediaServer('sqlite', { providers: fakeProviders([]), timings: { audioTimeoutMs: AUDIO_TIMEOUT_MS } });
  });
  after(() => s.close());

  it('a stall longer than the audio timeout does not end a call whose caller kept sending', { timeout: 30_000 }, async (t) => {
    const agentId = await s.flowAgent({ start_node_id: 'n', nodes: [{ id: 'n', type: 'conversation', instruction: { type: 'static_text', text: 'Hello.' }, edges: [] }] });
    const created = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
    const callId = created.json.call_id as string;
    const child = spawn(process.execPath, ['--input-type=module', '-e', CALLER, s.baseUrl, created.json.access_token as string], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    t.after(() => child.kill());
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (c: Buffer) => c.toString().includes('joined') && resolve());
      child.on('exit', (code) => reject(new Error(`the caller exited ${code}`)));
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal((await s.api('GET', `/v2/get-call/${callId}`)).json.call_status, 'ongoing');
    // The server's process (this one) does nothing for 2.5 timeouts while the caller sends on.
    const until = Date.now() + 2.5 * AUDIO_TIMEOUT_MS;
    while (Date.now() < until);
    await new Promise((resolve) => setTimeout(resolve, 2 * AUDIO_TIMEOUT_MS));
    const call = (await s.api('GET', `/v2/get-call/${callId}`)).json;
    assert.equal(call.call_status, 'ongoing', `the call ended ${String(call.disconnection_reason)} although its caller was sending`);
    child.kill();
    await new Promise((resolve) => child.once('exit', resolve));
  });
});
