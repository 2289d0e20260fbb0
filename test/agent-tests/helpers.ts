import fs from 'node:fs';
import type { Harness } from '../helpers/harness.ts';

/** The JSON blocks of docs/testing-agents.md tagged `json <tag>` (the worked example), as written. */
export function docBlocks(tag: string): any[] {
  const text = fs.readFileSync(new URL('../../docs/testing-agents.md', import.meta.url), 'utf8');
  return [...text.matchAll(new RegExp('```json ' + tag + '\\n([\\s\\S]*?)```', 'g'))].map((m) => JSON.parse(m[1]!));
}

/** An agent on `flow` under `key`. */
export async function flowAgent(h: Harness, key: string, flow: unknown): Promise<string> {
  const created = await h.request({ method: 'POST', url: '/create-conversation-flow', key, body: flow });
  if (created.status !== 201) throw new Error(`flow: ${created.raw}`);
  const agent = await h.request({ method: 'POST', url: '/create-agent', key, body: { response_engine: { type: 'conversation_flow', conversation_flow_id: created.json.conversation_flow_id } } });
  if (agent.status !== 201) throw new Error(`agent: ${agent.raw}`);
  return agent.json.agent_id as string;
}

/** Starts a run and waits until it is complete; returns get-test-run's answer. */
export async function runToEnd(h: Harness, key: string, body: unknown): Promise<any> {
  const started = await h.request({ method: 'POST', url: '/create-test-run', key, body });
  if (started.status !== 201) throw new Error(`create-test-run: ${started.status} ${started.raw}`);
  await h.runtime.services.tests.settled(started.json.test_run_id);
  const run = await h.request({ method: 'GET', url: `/get-test-run/${started.json.test_run_id}`, key });
  return run.json;
}
