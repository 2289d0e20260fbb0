import type { FastifyInstance, InjectOptions } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { type Config, loadConfig } from '../../src/config/config.ts';
import { ManualClock } from '../../src/lib/clock.ts';
import { type Runtime, createRuntime } from '../../src/runtime.ts';
import { type StoreName, TEST_WEBHOOK_SECRET_KEYS, type TestStore, openTestStore } from './stores.ts';
import { createSilentLogger } from '../../src/lib/logger.ts';

export interface Account {
  accountId: string;
  apiKey: string;
}

export interface Harness {
  storeName: StoreName;
  testStore: TestStore;
  clock: ManualClock;
  runtime: Runtime;
  app: FastifyInstance;
  config: Config;
  /** A new account with one key. */
  account(options?: { trialEndsAt?: number | null; rateLimitPerMinute?: number; concurrencyLimit?: number | null }): Promise<Account>;
  /** An injected request; `key` sets the Bearer header; `body` objects are sent as JSON. */
  request(options: { method: InjectOptions['method']; url: string; key?: string; body?: unknown; headers?: Record<string, string> }): Promise<{
    status: number;
    json: any;
    headers: Record<string, unknown>;
    raw: string;
  }>;
  close(): Promise<void>;
}

/** A runtime and app over a fresh store, on a manual clock. */
export async function startHarness(storeName: StoreName, env: Record<string, string> = {}): Promise<Harness> {
  const testStore = await openTestStore(storeName);
  const clock = new ManualClock(Date.now());
  // On PostgreSQL the key child servers get too (test/helpers/process.ts), so they read the secrets stored here.
  const sharedKey = storeName !== 'sqlite' ? { WEBHOOK_SECRET_KEYS: TEST_WEBHOOK_SECRET_KEYS } : {};
  const config = loadConfig({ DATA_DIR: testStore.dataDir, PORT: '0', ...sharedKey, ...env });
  const runtime = await createRuntime(config, { logger: createSilentLogger(), clock, store: testStore.store });
  const app = await buildApp(runtime);
  await app.ready();
  return {
    storeName,
    testStore,
    clock,
    runtime,
    app,
    config,
    async account(options = {}) {
      const created = await runtime.services.accounts.createAccount({
        trialEndsAt: options.trialEndsAt ?? null,
        rateLimitPerMinute: options.rateLimitPerMinute,
        concurrencyLimit: options.concurrencyLimit ?? null,
      });
      return { accountId: created.account_id, apiKey: created.api_key };
    },
    async request({ method, url, key, body, headers = {} }) {
      const allHeaders: Record<string, string> = { ...headers };
      if (key !== undefined) allHeaders.authorization = `Bearer ${key}`;
      let payload: string | undefined;
      if (body !== undefined) {
        payload = typeof body === 'string' ? body : JSON.stringify(body);
        allHeaders['content-type'] ??= 'application/json';
      }
      const response = await app.inject({ method, url, headers: allHeaders, payload });
      let json: unknown;
      try {
        json = response.body.length > 0 ? JSON.parse(response.body) : undefined;
      } catch {
        json = undefined;
      }
      return { status: response.statusCode, json, headers: response.headers, raw: response.body };
    },
    async close() {
      await app.close();
      await runtime.close();
      await testStore.close();
    },
  };
}

/** A small valid conversation flow: greet, branch on keywords, end. */
export function sampleFlow() {
  return {
    start_node_id: 'greet',
    global_prompt: 'You are a helpful receptionist.',
    default_dynamic_variables: { company: 'Acme' },
    start_speaker: 'agent',
    nodes: [
      {
        id: 'greet',
        type: 'conversation',
        instruction: { type: 'static_text', text: 'Hello, thanks for calling {{company}}. How can I help?' },
        edges: [
          { id: 'e_book', destination_node_id: 'book', transition_condition: { type: 'keyword', keywords: ['appointment', 'book'] } },
          { id: 'e_else', destination_node_id: 'bye', transition_condition: { type: 'always' } },
        ],
      },
      { id: 'book', type: 'end', instruction: { type: 'static_text', text: 'Your appointment is booked. Goodbye.' } },
      { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Goodbye.' } },
    ],
  };
}

/** Creates a flow and an agent on it; returns their ids. */
export async function createFlowAgent(h: Harness, key: string, agent: Record<string, unknown> = {}) {
  const flow = await h.request({ method: 'POST', url: '/create-conversation-flow', key, body: sampleFlow() });
  if (flow.status !== 201) throw new Error(`flow: ${flow.status} ${flow.raw}`);
  const created = await h.request({
    method: 'POST',
    url: '/create-agent',
    key,
    body: { agent_name: 'Reception', response_engine: { type: 'conversation_flow', conversation_flow_id: flow.json.conversation_flow_id }, ...agent },
  });
  if (created.status !== 201) throw new Error(`agent: ${created.status} ${created.raw}`);
  return { flowId: flow.json.conversation_flow_id as string, agentId: created.json.agent_id as string };
}
