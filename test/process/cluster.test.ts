// Three server processes on one PostgreSQL behind a real HAProxy started with deploy/haproxy.cfg
// (the configuration docs/deploy.md ships), WebSocket calls through the balancer: create, join,
// update, finish, read the recording (API key and signed link); then SIGKILL the server holding a
// call mid-call: the other servers go on serving, and webhook deliveries go on.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WebCallClient } from '../../src/client/web-call-client.ts';
import { ROOT, type ServerProcess, runCli, startServer } from '../helpers/process.ts';
import { STORES, type TestStore, openTestStore } from '../helpers/stores.ts';

const HAPROXY = ['/usr/sbin/haproxy', '/usr/bin/haproxy'].find((bin) => fs.existsSync(bin));
const postgres = STORES.find((kind) => kind.name === 'postgres')!;
const skip = postgres.skip || (HAPROXY ? false : 'haproxy is not installed (apt-get install haproxy, or bash scripts/setup.sh)');
const FAKE_ENGINES = { STT_PROVIDER: 'fake', TTS_PROVIDER: 'fake', VAD_PROVIDER: 'energy' };
const SERVERS = 3;

async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

/** Rows of HAProxy's `show stat` for the backend's servers: name -> { status, scur }. */
async function haproxyServers(socket: string): Promise<Map<string, { status: string; current: number }>> {
  const connection = net.connect(socket);
  connection.end('show stat\n');
  let text = '';
  for await (const chunk of connection) text += (chunk as Buffer).toString();
  const rows = new Map<string, { status: string; current: number }>();
  const lines = text.split('\n');
  const header = lines[0]!.replace(/^# /, '').split(',');
  for (const line of lines.slice(1)) {
    const cells = line.split(',');
    if (cells[0] !== 'servers' || cells[1] === 'BACKEND' || cells[1] === undefined) continue;
    rows.set(cells[1], { status: cells[header.indexOf('status')]!, current: Number(cells[header.indexOf('scur')]) });
  }
  return rows;
}

async function until<T>(what: string | (() => string), check: () => Promise<T | undefined | false>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('three servers on one PostgreSQL behind HAProxy', { skip }, () => {
  let store: TestStore;
  const servers: ServerProcess[] = [];
  const dirs: string[] = [];
  let haproxy: ChildProcess;
  let lb: string;
  let statsSocket: string;
  let key: string;
  let agentId: string;
  let receiver: http.Server;
  /** call.finished deliveries received, by call id (every attempt counted). */
  const finished = new Map<string, number>();

  const api = async (method: string, url: string, body?: unknown) => {
    const res = await fetch(`${lb}${url}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined };
  };

  before(async () => {
    store = await openTestStore('postgres');
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const event = JSON.parse(body) as { event: string; data: { call_id?: string } };
        if (event.event === 'call.finished' && event.data.call_id) finished.set(event.data.call_id, (finished.get(event.data.call_id) ?? 0) + 1);
        res.writeHead(204).end();
      });
    });
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');

    const lbPort = await freePort();
    lb = `http://127.0.0.1:${lbPort}`;
    const shared = {
      DATABASE_URL: store.databaseUrl!,
      WEBHOOK_SECRET_KEYS: randomBytes(32).toString('base64'),
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
      WEBHOOK_POLL_INTERVAL_MS: '200',
      PUBLIC_BASE_URL: lb,
      TRUST_PROXY: 'loopback',
      // WebRTC: each server advertises its own candidates (here its own ports on loopback).
      RTC_BIND_ADDRESS: '127.0.0.1',
      ...FAKE_ENGINES,
    };
    const created = await runCli(['keys', 'create', '--name', 'cluster', '--rate-limit', '1000'], { ...shared, DATA_DIR: store.dataDir });
    key = JSON.parse(created.stdout).api_key;
    for (let i = 0; i < SERVERS; i++) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), `sb-cluster-${i + 1}-`));
      dirs.push(dir);
      servers.push(await startServer({ ...shared, DATA_DIR: dir }, 60_000));
    }

    statsSocket = path.join(store.dataDir, 'haproxy.sock');
    haproxy = spawn(HAPROXY!, ['-f', path.join(ROOT, 'deploy/haproxy.cfg'), '-db'], {
      env: {
        ...process.env,
        SB_BIND: `127.0.0.1:${lbPort}`,
        SB_STATS_SOCKET: statsSocket,
        ...Object.fromEntries(servers.map((server, i) => [`SB_SERVER${i + 1}`, new URL(server.baseUrl).host])),
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let haproxyErr = '';
    haproxy.stderr!.on('data', (chunk: Buffer) => (haproxyErr += chunk.toString()));
    await until(
      () => `HAProxy to see every server UP (${haproxyErr})`,
      async () => {
        const rows = await haproxyServers(statsSocket);
        return rows.size === SERVERS && [...rows.values()].every((row) => row.status === 'UP');
      },
      30_000,
    );

    const flow = await api('POST', '/create-conversation-flow', {
      start_node_id: 'talk',
      nodes: [{ id: 'talk', type: 'conversation', instruction: { type: 'static_text', text: 'Hello, I am listening.' }, edges: [] }],
    });
    assert.equal(flow.status, 201, JSON.stringify(flow.json));
    const agent = await api('POST', '/create-agent', {
      agent_name: 'Cluster',
      response_engine: { type: 'conversation_flow', conversation_flow_id: flow.json.conversation_flow_id },
      webhook_url: `http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}/hooks`,
    });
    assert.equal(agent.status, 201, JSON.stringify(agent.json));
    agentId = agent.json.agent_id;
  });

  after(async () => {
    haproxy?.kill('SIGTERM');
    for (const server of servers) await server.stop('SIGKILL');
    receiver?.close();
    await store?.close();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** A call joined through the balancer, the agent's greeting heard. */
  async function joinedCall(): Promise<WebCallClient> {
    const created = await api('POST', '/v2/create-web-call', { agent_id: agentId, metadata: { via: 'haproxy' } });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const client = await WebCallClient.join({ url: lb, accessToken: created.json.access_token });
    await client.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
    return client;
  }

  it('create, join, update, finish and read the recording, all through the balancer', async () => {
    const client = await joinedCall();
    // Every API request below may land on any of the three servers.
    for (let i = 0; i < 6; i++) {
      const updated = await api('PATCH', `/v2/update-call/${client.callId}`, { custom_attributes: { [`step${i}`]: i } });
      assert.equal(updated.status, 200);
      assert.equal(updated.json.call_status, 'ongoing');
    }
    await client.hangup();
    const call = await until('the call to be ended', async () => {
      const got = await api('GET', `/v2/get-call/${client.callId}`);
      return got.json.call_status === 'ended' && got.json.recording_url ? got.json : undefined;
    }, 10_000);
    assert.equal(call.disconnection_reason, 'user_hangup');
    assert.equal(Object.keys(call.custom_attributes).length, 6);
    assert.deepEqual(call.metadata, { via: 'haproxy' });
    assert.ok(call.recording_url.startsWith(`${lb}/v2/recording/${client.callId}?`), call.recording_url);

    // The recording, from whichever server answers: several times, so more than one does.
    const sizes = new Set<number>();
    for (let i = 0; i < 6; i++) {
      const played = await fetch(call.recording_url);
      assert.equal(played.status, 200);
      sizes.add((await played.arrayBuffer()).byteLength);
      const keyed = await fetch(`${lb}/v2/get-call-recording/${client.callId}`, { headers: { authorization: `Bearer ${key}`, range: 'bytes=0-43' } });
      assert.equal(keyed.status, 206);
      assert.equal(Buffer.from(await keyed.arrayBuffer()).toString('latin1', 0, 4), 'RIFF');
    }
    assert.equal(sizes.size, 1, 'every server serves the same recording');
    assert.ok([...sizes][0]! > 44);
    await until('call.finished to arrive once', async () => finished.get(client.callId) === 1, 15_000);
  });

  it('a WebRTC call through the balancer: the offer lands on any server, the media goes to the server that answered it', async () => {
    const created = await api('POST', '/v2/create-web-call', { agent_id: agentId });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const client = await WebCallClient.join({ url: lb, accessToken: created.json.access_token, transport: 'webrtc', iceAddress: '127.0.0.1', timeoutMs: 20_000 });
    assert.equal((await client.waitFor('call_started')).transport, 'webrtc');
    await client.waitFor((e) => e.type === 'agent_stop_talking', 10_000);
    const updated = await api('PATCH', `/v2/update-call/${client.callId}`, { custom_attributes: { via: 'webrtc' } });
    assert.equal(updated.status, 200);
    await client.hangup();
    const call = await until('the WebRTC call to be ended', async () => {
      const got = await api('GET', `/v2/get-call/${client.callId}`);
      return got.json.call_status === 'ended' && got.json.media ? got.json : undefined;
    }, 10_000);
    assert.equal(call.disconnection_reason, 'user_hangup');
    assert.equal(call.media.transport, 'webrtc');
    assert.ok(call.media.packets_in > 0 && call.media.packets_out > 0, JSON.stringify(call.media));
    assert.ok(client.agentPcm().length > 0, 'the greeting was heard over WebRTC');
  });

  describe('a server killed mid-call', () => {
    let killed: { callId: string; index: number };
    before(async () => {
      const client = await joinedCall();
      // The server holding the call is the one with a connection open: the call's WebSocket.
      const holder = await until('the call to show on one server', async () => {
        const rows = await haproxyServers(statsSocket);
        const busy = [...rows.entries()].filter(([, row]) => row.current > 0);
        return busy.length === 1 ? busy[0]![0] : undefined;
      }, 10_000);
      const index = Number(holder.slice(1)) - 1;
      await servers[index]!.stop('SIGKILL');
      killed = { callId: client.callId, index };
      await client.ended.catch(() => undefined);
      await until('HAProxy to take the dead server out', async () => (await haproxyServers(statsSocket)).get(holder)?.status.startsWith('DOWN'), 15_000);
    });

    it('the other servers serve the API and take new calls, and webhook deliveries go on', async () => {
      assert.equal((await api('GET', `/v2/get-call/${killed.callId}`)).status, 200);
      const client = await joinedCall();
      assert.equal((await api('PATCH', `/v2/update-call/${client.callId}`, { metadata: { after: 'kill' } })).status, 200);
      await client.hangup();
      await until('call.finished of a call made after the kill', async () => finished.get(client.callId) === 1, 15_000);
      const played = await fetch((await api('GET', `/v2/get-call/${client.callId}`)).json.recording_url);
      assert.equal(played.status, 200);
    });

    it('the killed server\'s call is ended by a live server and reported once', async () => {
      const call = await until('the call to be ended', async () => {
        const got = await api('GET', `/v2/get-call/${killed.callId}`);
        return got.json.call_status !== 'ongoing' ? got.json : undefined;
      }, 45_000);
      assert.equal(call.call_status, 'error');
      assert.equal(call.disconnection_reason, 'error_server_lost');
      await until('call.finished for it', async () => finished.get(killed.callId) === 1, 15_000);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      assert.equal(finished.get(killed.callId), 1, 'reported exactly once');
    });
  });
});
