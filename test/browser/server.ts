/**
 * The real server as a child process (`node src/main.ts`) over a fresh SQLite data directory,
 * with an operator account whose key is the demo's DEMO_API_KEY, and an in-process runtime over
 * the same store for seeding what the API cannot make (a finished call with a recording).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config/config.ts';
import { encodeWav } from '../../src/lib/wav.ts';
import { type Runtime, createRuntime } from '../../src/runtime.ts';
import { sampleFlow } from '../helpers/harness.ts';
import { type ServerProcess, startServer } from '../helpers/process.ts';
import { createSilentLogger } from '../../src/lib/logger.ts';

export interface WebServer {
  baseUrl: string;
  /** The operator's key (also DEMO_API_KEY). */
  apiKey: string;
  dataDir: string;
  server: ServerProcess;
  runtime: Runtime;
  /** An API request with the operator key. */
  api(method: string, url: string, body?: unknown): Promise<{ status: number; json: any }>;
  close(): Promise<void>;
}

export async function startWebServer(env: Record<string, string> = {}): Promise<WebServer> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-web-'));
  const runtime = await createRuntime(loadConfig({ DATA_DIR: dataDir, PORT: '0' }), { logger: createSilentLogger() });
  const account = await runtime.services.accounts.createAccount({ name: 'operator' });
  let server: ServerProcess;
  try {
    server = await startServer({ DATA_DIR: dataDir, DEMO_API_KEY: account.api_key, LOG_LEVEL: 'info', RTC_BIND_ADDRESS: '127.0.0.1', ...env });
  } catch (error) {
    await runtime.close();
    throw error;
  }
  const baseUrl = server.baseUrl;
  return {
    baseUrl,
    apiKey: account.api_key,
    dataDir,
    server,
    runtime,
    async api(method, url, body) {
      const response = await fetch(`${baseUrl}${url}`, {
        method,
        headers: { authorization: `Bearer ${account.api_key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, json: text ? JSON.parse(text) : undefined };
    },
    async close() {
      await server.stop();
      await runtime.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A flow (sampleFlow: greet, "appointment"/"book" → book, else → bye) and an agent on it. */
export async function createDemoAgent(web: WebServer, name = 'Reception'): Promise<{ flowId: string; agentId: string }> {
  const flow = await web.api('POST', '/create-conversation-flow', sampleFlow());
  if (flow.status !== 201) throw new Error(`flow: ${flow.status} ${JSON.stringify(flow.json)}`);
  const agent = await web.api('POST', '/create-agent', {
    agent_name: name,
    response_engine: { type: 'conversation_flow', conversation_flow_id: flow.json.conversation_flow_id },
  });
  if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${JSON.stringify(agent.json)}`);
  return { flowId: flow.json.conversation_flow_id, agentId: agent.json.agent_id };
}

/** Length of the seeded call's recording, in s (its transcript's lines start at 0, 3 and 5.8 s). */
export const SEEDED_RECORDING_S = 8;

/**
 * A finished call with transcript, recording (an 8 s stereo tone), latency and analysis, made the
 * way the media runtime makes one: create-web-call, join with the token, finish with an outcome.
 */
export async function seedFinishedCall(web: WebServer, agentId: string): Promise<string> {
  const created = await web.api('POST', '/v2/create-web-call', { agent_id: agentId, metadata: { customer: 'ACME-42' } });
  if (created.status !== 201) throw new Error(`create-web-call: ${created.status}`);
  const callId: string = created.json.call_id;
  await web.runtime.services.lifecycle.joinCall(created.json.access_token);
  const rate = 16_000;
  const frames = rate * SEEDED_RECORDING_S;
  const samples = new Int16Array(frames * 2);
  for (let i = 0; i < frames; i++) samples[i * 2 + 1] = Math.round(6000 * Math.sin((2 * Math.PI * 440 * i) / rate));
  const relative = path.join('recordings', `${callId}.wav`);
  fs.mkdirSync(path.join(web.dataDir, 'recordings'), { recursive: true });
  fs.writeFileSync(path.join(web.dataDir, relative), encodeWav({ sampleRate: rate, channels: 2, samples }));
  const transcriptObject = [
    { role: 'agent' as const, content: 'Hello, thanks for calling Acme. How can I help?', start_ms: 0, end_ms: 2_400, cut_off: false },
    { role: 'user' as const, content: 'I would like to book an appointment', start_ms: 3_000, end_ms: 5_100, cut_off: false },
    { role: 'agent' as const, content: 'Your appointment is booked. Goodbye.', start_ms: 5_800, end_ms: 7_900, cut_off: false },
  ];
  const summary = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
    return { p50: at(0.5), p90: at(0.9), p95: at(0.95), p99: at(0.99), min: sorted[0]!, max: sorted.at(-1)!, num: values.length, values };
  };
  await web.runtime.services.lifecycle.finishCall(callId, {
    reason: 'agent_hangup',
    transcript: transcriptObject.map((t) => `${t.role === 'agent' ? 'Agent' : 'User'}: ${t.content}`).join('\n'),
    transcriptObject,
    recordingPath: relative,
    callAnalysis: { call_summary: 'The caller booked an appointment.', call_successful: true, user_sentiment: 'Positive' },
    latency: { e2e: summary([640, 820]), asr: summary([120, 150]), llm: summary([1, 2]), tts: summary([30, 40]) },
  });
  const updated = await web.api('PATCH', `/v2/update-call/${callId}`, { custom_attributes: { priority: 'gold' } });
  if (updated.status !== 200) throw new Error(`update-call: ${updated.status}`);
  return callId;
}
