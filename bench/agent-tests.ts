/**
 * Agent-tests benchmark (`npm run bench -- agent-tests`): text-mode test runs of a flow agent, in
 * cases per second, on an in-memory SQLite runtime (what `cli test --file` uses). The case is the
 * worked example of docs/testing-agents.md (keypad, an order number, a mocked function, seven
 * assertions). Baseline, in the same script: the same conversations played on the flow engine
 * alone (no run, no store, no assertions), so the ratio is what the test machinery costs.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config/config.ts';
import { createSilentLogger } from '../src/lib/logger.ts';
import { createRuntime } from '../src/runtime.ts';
import { openStore } from '../src/storage/store.ts';
import { FlowEngine } from '../src/voice/index.ts';
import { fmt, machine } from './lib.ts';

function docBlocks(tag: string): any[] {
  const text = fs.readFileSync(new URL('../docs/testing-agents.md', import.meta.url), 'utf8');
  return [...text.matchAll(new RegExp('```json ' + tag + '\\n([\\s\\S]*?)```', 'g'))].map((m) => JSON.parse(m[1]!));
}

async function drain(outputs: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of outputs);
}

export async function runAgentTestsBench(options: { cases?: number; audioCases?: number; log: (line: string) => void }): Promise<string> {
  const n = options.cases ?? 300;
  const audioCases = options.audioCases ?? 8;
  const [flow] = docBlocks('flow');
  const [example] = docBlocks('case');
  const mocks = example.tool_mocks as Record<string, { response: unknown }>;

  // Baseline: the engine alone, the same script, the mock answering at once.
  const baselineStart = performance.now();
  for (let i = 0; i < n; i++) {
    const engine = new FlowEngine({
      flow,
      functions: { call: async () => ({ ok: true, content: JSON.stringify(mocks['lookup_order']!.response), json: mocks['lookup_order']!.response, durationMs: 0 }) },
    });
    const signal = new AbortController().signal;
    await drain(engine.begin(signal));
    await drain(engine.respond('1', signal));
    await drain(engine.respond('it is five five five one two three four', signal));
  }
  const baselinePerS = n / ((performance.now() - baselineStart) / 1000);
  options.log(`baseline: ${fmt(baselinePerS)} conversations/s on the engine alone`);

  const config = loadConfig({ DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'sb-bench-tests-')), LLM_BASE_URL: '', STT_PROVIDER: 'pocketsphinx', TTS_PROVIDER: 'flite' });
  const store = await openStore({ databaseUrl: null, dataDir: config.dataDir, sqliteFile: ':memory:' });
  const runtime = await createRuntime(config, { logger: createSilentLogger(), store });
  const rows: string[] = [];
  try {
    const { services } = runtime;
    const account = await services.accounts.createAccount({ trialEndsAt: null, concurrencyLimit: null });
    const created = await services.agents.createFlow(account.account_id, flow);
    const agent = await services.agents.createAgent(account.account_id, { response_engine: { type: 'conversation_flow', conversation_flow_id: created.conversation_flow_id } } as never);
    for (let i = 0; i < n; i++) await services.tests.createCase(account.account_id, { ...example, agent_id: agent.agent_id, name: `case ${i}` });
    const started = performance.now();
    const run = await services.tests.createRun(account.account_id, { agent_id: agent.agent_id });
    await services.tests.settled(run.test_run_id);
    const seconds = (performance.now() - started) / 1000;
    const result = await services.tests.getRun(account.account_id, run.test_run_id);
    if (result.passed !== n) throw new Error(`expected ${n} passing cases, got ${result.passed}`);
    const perS = n / seconds;
    options.log(`text mode: ${n} cases in ${fmt(seconds, 2)} s`);
    // Audio mode: `audioCases` cases of one run, played at once (the run plays 8 at a time).
    const audioFlow = await services.agents.createFlow(account.account_id, {
      start_node_id: 'greet',
      nodes: [
        { id: 'greet', type: 'conversation', instruction: { type: 'static_text', text: 'Hello. Sales or support?' }, edges: [
          { id: 's', destination_node_id: 'sales', transition_condition: { type: 'keyword', keywords: ['sales'] } },
          { id: 'h', destination_node_id: 'support', transition_condition: { type: 'keyword', keywords: ['support'] } },
        ] },
        { id: 'sales', type: 'end', instruction: { type: 'static_text', text: 'Sales it is. Goodbye.' } },
        { id: 'support', type: 'end', instruction: { type: 'static_text', text: 'Support it is. Goodbye.' } },
      ],
    } as never);
    const audioAgent = await services.agents.createAgent(account.account_id, { response_engine: { type: 'conversation_flow', conversation_flow_id: audioFlow.conversation_flow_id } } as never);
    const phrases = [['i want sales please', 'sales'], ['support please', 'support']] as const;
    for (let i = 0; i < audioCases; i++) {
      const [say, node] = phrases[i % phrases.length]!;
      await services.tests.createCase(account.account_id, { agent_id: audioAgent.agent_id, mode: 'audio', name: `audio ${i}`, caller: { script: [{ say }] }, assertions: [{ type: 'node_reached', node_id: node }] });
    }
    const audioStarted = performance.now();
    const audioRun = await services.tests.createRun(account.account_id, { agent_id: audioAgent.agent_id });
    await services.tests.settled(audioRun.test_run_id);
    const audioWallS = (performance.now() - audioStarted) / 1000;
    const audioResult = await services.tests.getRun(account.account_id, audioRun.test_run_id);
    const callS = audioResult.results.reduce((s, r) => s + (r.simulated_ms ?? 0), 0) / 1000;
    const perCase = audioResult.results.map((r) => (r.simulated_ms ?? 0) / Math.max(1, r.duration_ms));
    const meanPerCase = perCase.reduce((a, b) => a + b, 0) / Math.max(1, perCase.length);
    options.log(`audio mode: ${audioCases} cases at once in ${fmt(audioWallS, 1)} s, ${audioResult.passed} passed; errors: ${audioResult.results.map((r) => r.error).filter(Boolean).join('; ')}`);
    rows.push(`| audio mode, ${audioCases} cases in one run (8 at once), PocketSphinx + Flite | ${audioResult.passed}/${audioCases} branches right; per case ${fmt(meanPerCase, 2)}x real time (call time / wall time); the run: ${fmt(callS, 1)} s of calls in ${fmt(audioWallS, 1)} s | real time = 1x | ${fmt(meanPerCase, 2)} | >= 3x per case: ${meanPerCase >= 3 ? 'met' : 'not met'}; >= 8 at once: ${audioResult.results.length >= 8 && audioResult.passed === audioResult.results.length ? 'met' : 'not met'} |`);
    rows.push(`| text mode, flow agent (${n} cases, one run, 8 at once) | ${fmt(perS)} cases/s | ${fmt(baselinePerS)} conversations/s | ${fmt(perS / baselinePerS, 2)} | >= 50 cases/s: ${perS >= 50 ? 'met' : 'not met'} |`);
  } finally {
    await runtime.close();
    fs.rmSync(config.dataDir, { recursive: true, force: true });
  }
  return [`${machine()}`, '', '| what | result | baseline (engine alone) | ratio | target |', '|---|---|---|---|---|', ...rows].join('\n');
}
