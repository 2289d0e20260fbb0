// `cli test`, as a child process: `--file` plays the YAML file of docs/testing-agents.md with no
// server and no network (a preload records every socket the process opens: none may leave
// loopback), `--agent` runs an agent's cases on a server; both exit 1 when a case fails and write
// a JUnit report that parses.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { runCli } from '../helpers/process.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { docBlocks, flowAgent } from './helpers.ts';
import { parseXml } from './xml.ts';

const PRELOAD = new URL('./no-network.mjs', import.meta.url).pathname;

/** The YAML block of the document, as written. */
function docYaml(): string {
  const text = fs.readFileSync(new URL('../../docs/testing-agents.md', import.meta.url), 'utf8');
  return /```yaml agent-tests\n([\s\S]*?)```/.exec(text)![1]!;
}

describe('cli test --file: agents as code, offline', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-agent-tests-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const offline = (log: string) => ({ DATA_DIR: dir, DATABASE_URL: '', LLM_BASE_URL: '', SOCKET_LOG: log, NODE_OPTIONS: `--import=${PRELOAD}` });

  it("plays the document's file with no server and no socket beyond loopback, exits 0, and reports JUnit", { timeout: 60_000 }, async () => {
    const file = path.join(dir, 'agent-tests.yaml');
    fs.writeFileSync(file, docYaml());
    const log = path.join(dir, 'sockets.log');
    fs.writeFileSync(log, '');
    const junit = path.join(dir, 'report.xml');
    const result = await runCli(['test', '--file', file, '--junit', junit], offline(log));
    assert.equal(result.code, 0, result.stderr + result.stdout);
    const run = JSON.parse(result.stdout);
    assert.deepEqual([run.status, run.passed, run.failed], ['complete', 2, 0]);
    const sockets = fs.readFileSync(log, 'utf8').split('\n').filter(Boolean);
    assert.deepEqual(sockets.filter((s) => !/^(tcp|udp) (127\.|::1|localhost|\/)/.test(s)), [], `sockets: ${sockets.join(', ')}`);
    const report = parseXml(fs.readFileSync(junit, 'utf8'));
    assert.equal(report.name, 'testsuites');
    const suite = report.children[0]!;
    assert.deepEqual([suite.attrs['tests'], suite.attrs['failures'], suite.attrs['errors']], ['2', '0', '0']);
    assert.deepEqual(suite.children.map((c) => c.attrs['name']), ['sales by voice', 'support by keypad']);
  });

  it('exits 1 on a failing case, naming its first failing assertion in the JUnit failure', { timeout: 60_000 }, async () => {
    const file = path.join(dir, 'failing.yaml');
    fs.writeFileSync(file, `${docYaml()}  - name: "wrong <branch> & more"\n    caller: { script: [ { say: "support" } ] }\n    assertions:\n      - { type: node_reached, node_id: sales }\n`);
    const log = path.join(dir, 'sockets2.log');
    fs.writeFileSync(log, '');
    const junit = path.join(dir, 'failing.xml');
    const result = await runCli(['test', '--file', file, '--junit', junit], offline(log));
    assert.equal(result.code, 1, result.stderr);
    assert.equal(JSON.parse(result.stdout).failed, 1);
    const suite = parseXml(fs.readFileSync(junit, 'utf8')).children[0]!;
    assert.equal(suite.attrs['failures'], '1');
    const failed = suite.children.find((c) => c.attrs['name'] === 'wrong <branch> & more')!;
    const failure = failed.children.find((c) => c.name === 'failure')!;
    assert.match(failure.attrs['message']!, /^node_reached: expected "sales", got \["greet","support"\]/);
    assert.match(failed.children.find((c) => c.name === 'system-out')!.text, /User: support/);
  });

  it('refuses a bad file naming the case and the field, and exits 1', { timeout: 60_000 }, async () => {
    const file = path.join(dir, 'bad.yaml');
    fs.writeFileSync(file, stringify({ conversation_flow: { start_node_id: 'a', nodes: [{ id: 'a', type: 'end', instruction: { type: 'static_text', text: 'Bye.' } }] }, cases: [{ caller: { script: [] }, assertions: [{ type: 'transcript_matches', pattern: '(x+)+' }] }] }));
    const result = await runCli(['test', '--file', file], offline(path.join(dir, 'sockets3.log')));
    assert.equal(result.code, 1);
    assert.match(result.stderr, /cases\.0: assertions\.0\.pattern/);
  });
});

describe('cli test --agent: a run on a server', () => {
  let h: Harness;
  let key: string;
  let baseUrl: string;
  before(async () => {
    h = await startHarness('sqlite');
    key = (await h.account()).apiKey;
    baseUrl = await h.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => h?.close());

  it("runs the agent's cases, prints the run, exits 0 when all pass and 1 when one fails", { timeout: 60_000 }, async () => {
    const [flow] = docBlocks('flow');
    const agentId = await flowAgent(h, key, flow);
    const [passing] = docBlocks('case');
    await h.request({ method: 'POST', url: '/create-test-case', key, body: { ...passing, agent_id: agentId } });
    const env = { SWITCHBOARD_API_KEY: key, SWITCHBOARD_BASE_URL: baseUrl };
    const junit = path.join(os.tmpdir(), `sb-junit-${process.pid}.xml`);
    const ok = await runCli(['test', '--agent', agentId, '--junit', junit], env);
    assert.equal(ok.code, 0, ok.stderr);
    assert.deepEqual([JSON.parse(ok.stdout).passed, JSON.parse(ok.stdout).failed], [1, 0]);
    assert.equal(parseXml(fs.readFileSync(junit, 'utf8')).children[0]!.attrs['tests'], '1');
    fs.rmSync(junit, { force: true });
    await h.request({ method: 'POST', url: '/create-test-case', key, body: { agent_id: agentId, name: 'never', caller: { script: [] }, assertions: [{ type: 'node_reached', node_id: 'bye' }] } });
    const failing = await runCli(['test', '--agent', agentId], env);
    assert.equal(failing.code, 1, failing.stderr);
    assert.equal(JSON.parse(failing.stdout).failed, 1);
    const missing = await runCli(['test', '--agent', 'agent_00000000000000000000000000000000'], env);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /agent_not_found/);
  });
});
