/**
 * @switchboard/node as a user installs it: `npm pack` holds the bundle, its map, its types, the
 * README and package.json, with no dependencies; the tarball installs offline into a fresh
 * project, where a JavaScript program drives a real server (calls, agents, webhooks, a 422, webhook
 * verification) and a TypeScript program compiles under `tsc --strict` (and a misuse does not).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildPackage } from '../../scripts/build-packages.ts';
import { type Harness, sampleFlow, startHarness } from '../helpers/harness.ts';
import { ROOT } from '../helpers/process.ts';
import { npm, packPackage, strictProject, tsc } from './pack-helpers.ts';

const PROGRAM = `
import { createHmac } from 'node:crypto';
import { Switchboard, UnprocessableEntityError, APIError, verifyWebhook, WebhookVerificationError } from '@switchboard/node';

const client = new Switchboard(); // SWITCHBOARD_API_KEY, SWITCHBOARD_BASE_URL
const flow = await client.conversationFlows.create(JSON.parse(process.env.FLOW));
const agent = await client.agents.create({ response_engine: { type: 'conversation_flow', conversation_flow_id: flow.conversation_flow_id } });
const call = await client.calls.createWebCall({ agent_id: agent.agent_id });
const fetched = await client.calls.retrieve(call.call_id);
let missing;
try {
  await client.calls.retrieve('call_missing');
} catch (error) {
  missing = { unprocessable: error instanceof UnprocessableEntityError, api: error instanceof APIError, status: error.status, code: error.code };
}
const webhook = await client.webhooks.set({ url: 'https://hooks.acme.dev/in', events: ['*'] });
const body = JSON.stringify({ event: 'call.finished', data: { call_id: call.call_id }, sent_at: new Date().toISOString() });
const id = 'msg_1';
const timestamp = String(Math.floor(Date.now() / 1000));
const key = Buffer.from(webhook.secret.slice('whsec_'.length), 'base64');
const signature = 'v1,' + createHmac('sha256', key).update(id + '.' + timestamp + '.' + body).digest('base64');
const verified = verifyWebhook(body, { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature }, webhook.secret);
let forged = false;
try {
  verifyWebhook(body.replace('call.finished', 'call.started'), { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature }, webhook.secret);
} catch (error) {
  forged = error instanceof WebhookVerificationError;
}
console.log(JSON.stringify({ token: typeof call.access_token, status: fetched.call_status, missing, event: verified.event, forged, calls: (await client.calls.list()).length }));
`;

const TYPED = `
import { Switchboard, APIError, verifyWebhook, type Call, type Agent, type CreateWebCallParams, type WebhookDelivery } from '@switchboard/node';

const client = new Switchboard({ apiKey: 'sb_x', baseUrl: 'http://127.0.0.1:8080', maxRetries: 3, timeoutMs: 10_000 });
export async function run(agentId: string): Promise<string> {
  const params: CreateWebCallParams = { agent_id: agentId, metadata: { order: 1 }, service_llm_dynamic_variables: { name: 'Ada' } };
  const call: Call = await client.calls.createWebCall(params, { idempotencyKey: 'order-1' });
  const status: 'registered' | 'ongoing' | 'ended' | 'error' = call.call_status;
  const agents: Agent[] = await client.agents.list();
  const deliveries: WebhookDelivery[] = (await client.webhooks.deliveries({ status: 'failed', limit: 10 })).deliveries;
  const first: number | undefined = deliveries[0]?.attempts[0]?.status_code ?? undefined;
  try {
    await client.calls.update(call.call_id, { data_storage_setting: 'everything_except_pii' });
  } catch (error) {
    if (error instanceof APIError) return String(error.status) + error.code;
  }
  const hook = verifyWebhook('{}', new Headers(), 'whsec_x');
  return [status, agents.length, first, hook.event].join();
}
`;

const MISUSE = `
import { Switchboard } from '@switchboard/node';
const client = new Switchboard();
void client.calls.createWebCall({ agentId: 'a' });
void client.agents.update('a', { interruption_sensitivity: 'high' });
`;

describe('@switchboard/node, packed and installed', () => {
  let work: string;
  let tarball: string;
  let h: Harness;
  let baseUrl: string;
  let apiKey: string;
  before(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-node-pack-'));
    await buildPackage('node');
    ({ tarball } = packPackage('packages/node', work));
    h = await startHarness('sqlite');
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(h.app.server.address() as net.AddressInfo).port}`;
    ({ apiKey } = await h.account());
  });
  after(async () => {
    await h?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('packs the bundle, its map and types, the README and package.json, with no dependencies', () => {
    const packed = packPackage('packages/node', work);
    assert.deepEqual(packed.files, ['README.md', 'dist/index.d.ts', 'dist/index.js', 'dist/index.js.map', 'package.json']);
    const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'packages/node/package.json'), 'utf8'));
    assert.equal(manifest.dependencies, undefined);
    const types = fs.readFileSync(path.join(ROOT, 'packages/node/dist/index.d.ts'), 'utf8');
    assert.doesNotMatch(types, /^import .* from ['"](?!node:)/m, 'the types import nothing but node:');
  });

  it('installs offline into a fresh project; JavaScript drives a real server, strict TypeScript compiles', async () => {
    const project = strictProject(path.join(work, 'app'));
    npm(['install', '--offline', '--no-audit', '--no-fund', tarball], project);
    assert.deepEqual(fs.readdirSync(path.join(project, 'node_modules')).filter((d) => !d.startsWith('.')), ['@switchboard'], 'nothing else installed');

    fs.writeFileSync(path.join(project, 'main.mjs'), PROGRAM);
    // Asynchronously: the server runs in this process.
    const run = await promisify(execFile)(process.execPath, ['main.mjs'], {
      cwd: project,
      encoding: 'utf8',
      env: { ...process.env, SWITCHBOARD_API_KEY: apiKey, SWITCHBOARD_BASE_URL: baseUrl, FLOW: JSON.stringify(sampleFlow()) },
      timeout: 60_000,
    });
    assert.deepEqual(JSON.parse(run.stdout), {
      token: 'string',
      status: 'registered',
      missing: { unprocessable: true, api: true, status: 422, code: 'call_not_found' },
      event: 'call.finished',
      forged: true,
      calls: 1,
    });

    fs.writeFileSync(path.join(project, 'typed.ts'), TYPED);
    const typed = tsc(project);
    assert.equal(typed.status, 0, typed.stdout);
    fs.writeFileSync(path.join(project, 'misuse.ts'), MISUSE);
    const misuse = tsc(project);
    assert.notEqual(misuse.status, 0);
    assert.match(misuse.stdout, /misuse\.ts\(4,\d+\): error TS(2353|2561)/, misuse.stdout);
    assert.match(misuse.stdout, /misuse\.ts\(5,\d+\): error TS2322/, misuse.stdout);
  });
});
