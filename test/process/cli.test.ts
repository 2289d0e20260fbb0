/**
 * The CLI as a user runs it against a real server process: `--version`, the key and server from
 * SWITCHBOARD_API_KEY / SWITCHBOARD_BASE_URL, `call` printing the conversation live on stderr,
 * `join --token` on a call created through the API (with a WAV, and with silence until the agent
 * hangs up), and `calls list` / `calls get` through the Node client. JSON on stdout (not a terminal).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConversationPrinter } from '../../src/client/call-command.ts';
import { type ClientEvent, writeWav } from '../../src/client/web-call-client.ts';
import { type ServerProcess, runCli, startServer } from '../helpers/process.ts';
import { concat, silence, tone } from '../media/helpers.ts';

const FAKE_ENGINES = { STT_PROVIDER: 'fake', TTS_PROVIDER: 'fake', VAD_PROVIDER: 'energy' };
const VERSION = (JSON.parse(fs.readFileSync(path.join(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string }).version;

describe('the CLI against a server process', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-cli-'));
  const env = { DATA_DIR: dataDir, ...FAKE_ENGINES };
  let server: ServerProcess;
  let api: Record<string, string>;
  let apiKey: string;
  let talker: string;
  let goodbye: string;
  const wav = path.join(dataDir, 'caller.wav');

  const post = async (url: string, body: unknown) =>
    (await fetch(`${server.baseUrl}${url}`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })).json() as Promise<Record<string, string>>;
  const agentOn = async (nodes: unknown[]) => {
    const flow = await post('/create-conversation-flow', { start_node_id: 'hi', nodes });
    return (await post('/create-agent', { response_engine: { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id } })).agent_id!;
  };

  before(async () => {
    const key = await runCli(['keys', 'create', '--name', 'cli'], env);
    assert.equal(key.code, 0, key.stderr);
    apiKey = JSON.parse(key.stdout).api_key;
    server = await startServer(env);
    api = { SWITCHBOARD_API_KEY: apiKey, SWITCHBOARD_BASE_URL: server.baseUrl };
    talker = await agentOn([{ id: 'hi', type: 'conversation', instruction: { type: 'static_text', text: 'Hi there.' } }]);
    goodbye = await agentOn([{ id: 'hi', type: 'end', instruction: { type: 'static_text', text: 'Goodbye.' } }]);
    fs.writeFileSync(wav, writeWav(concat(silence(1_200), tone(500), silence(300)), 16_000));
  });
  after(async () => {
    await server?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('--version says the version, as text or as JSON', async () => {
    const text = await runCli(['--version'], {});
    assert.equal(text.code, 0);
    assert.equal(text.stdout, `switchboard ${VERSION}\n`);
    assert.deepEqual(JSON.parse((await runCli(['--json', '--version'], {})).stdout), { version: VERSION });
  });

  it('call takes the key and server from the environment and prints the conversation live on stderr', async () => {
    const res = await runCli(['call', '--agent', talker, '--wav', wav, '--linger-ms', '600'], api);
    assert.equal(res.code, 0, res.stderr);
    const result = JSON.parse(res.stdout);
    assert.equal(result.disconnection_reason, 'user_hangup');
    assert.deepEqual(res.stderr.split('\n').filter(Boolean), ['agent: Hi there.']);
    const noKey = await runCli(['call', '--agent', talker, '--wav', wav], { SWITCHBOARD_API_KEY: '' });
    assert.equal(noKey.code, 1);
    assert.match(JSON.parse(noKey.stderr.split('\n')[0]!).message, /SWITCHBOARD_API_KEY/);
  });

  it('join --token joins a call created through the API: with a WAV, and with silence until the agent hangs up', async () => {
    const created = await post('/v2/create-web-call', { agent_id: talker });
    const res = await runCli(['join', '--token', created.access_token!, '--wav', wav, '--linger-ms', '600'], { SWITCHBOARD_BASE_URL: server.baseUrl });
    assert.equal(res.code, 0, res.stderr);
    const result = JSON.parse(res.stdout);
    assert.equal(result.call_id, created.call_id);
    assert.equal(result.call_status, 'ended');
    assert.deepEqual(result.transcript, [{ role: 'agent', content: 'Hi there.' }]);
    assert.match(res.stderr, /^agent: Hi there\.$/m);

    const ending = await post('/v2/create-web-call', { agent_id: goodbye });
    const silent = await runCli(['join', '--token', ending.access_token!, '--base-url', server.baseUrl], {});
    assert.equal(silent.code, 0, silent.stderr);
    assert.equal(JSON.parse(silent.stdout).call_id, ending.call_id);
    assert.equal(JSON.parse(silent.stdout).disconnection_reason, 'agent_hangup');
    assert.match(silent.stderr, /^agent: Goodbye\.$/m);

    const used = await runCli(['join', '--token', created.access_token!], { SWITCHBOARD_BASE_URL: server.baseUrl });
    assert.equal(used.code, 1);
    assert.equal(JSON.parse(used.stderr.split('\n')[0]!).code, 'token_used');
  });

  it('calls list and calls get go through the Node client; a missing call is call_not_found', async () => {
    const listed = await runCli(['calls', 'list', '--limit', '2'], api);
    assert.equal(listed.code, 0, listed.stderr);
    const { calls } = JSON.parse(listed.stdout);
    assert.equal(calls.length, 2);
    const got = await runCli(['calls', 'get', calls[0].call_id], api);
    assert.equal(got.code, 0, got.stderr);
    assert.equal(JSON.parse(got.stdout).call_id, calls[0].call_id);
    const missing = await runCli(['calls', 'get', 'call_missing'], api);
    assert.equal(missing.code, 1);
    assert.equal(JSON.parse(missing.stderr.split('\n')[0]!).code, 'call_not_found');
  });
});

describe('the live conversation lines', () => {
  it('prints each utterance once it is final, flushes at a node change, and the rest at the end', () => {
    const lines: string[] = [];
    const printer = new ConversationPrinter((line) => lines.push(line));
    const update = (transcript: Array<{ role: 'agent' | 'user'; content: string; cut_off?: boolean }>) => printer.event({ type: 'update', transcript, atMs: 0 } as ClientEvent);
    update([{ role: 'agent', content: 'Hello' }]);
    update([{ role: 'agent', content: 'Hello, how can I help?' }]);
    assert.deepEqual(lines, [], 'the last utterance may still grow');
    update([{ role: 'agent', content: 'Hello, how can I help?' }, { role: 'user', content: 'book' }]);
    printer.event({ type: 'node_transition', from: 'greet', to: 'book', atMs: 0 });
    update([{ role: 'agent', content: 'Hello, how can I help?' }, { role: 'user', content: 'book' }, { role: 'agent', content: 'Booked.', cut_off: true }]);
    printer.finish([{ role: 'agent', content: 'Hello, how can I help?' }, { role: 'user', content: 'book' }, { role: 'agent', content: 'Booked.', cut_off: true }]);
    assert.deepEqual(lines, ['agent: Hello, how can I help?', 'user: book', 'node: greet -> book', 'agent: Booked. [cut off]']);
  });
});
