/**
 * Agent-tests benchmark (`npm run bench -- agent-tests`): text-mode test runs of a flow agent, in
 * cases per second, on an in-memory SQLite runtime (what `cli test --file` uses). The case is the
 * worked example of docs/testing-agents.md (keypad, an order number, a mocked function, seven
 * assertions). Baseline, in the same script: the same conversations played on the flow engine
 * alone (no run, no store, no assertions), so the ratio is what the test machinery costs.
 * Audio mode (virtual clock, PocketSphinx + Flite): the recognition bench's caller phrases at a node
 * branching on their keywords, in two Flite voices, in one run (8 cases at once): speed per case
 * (call time / wall time) against one case played alone in the same script, and the branches taken.
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
import { CALLER_PHRASES } from './recognition.ts';

function docBlocks(tag: string): any[] {
  const text = fs.readFileSync(new URL('../docs/testing-agents.md', import.meta.url), 'utf8');
  return [...text.matchAll(new RegExp('```json ' + tag + '\\n([\\s\\S]*?)```', 'g'))].map((m) => JSON.parse(m[1]!));
}

async function drain(outputs: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of outputs);
}

export async function runAgentTestsBench(options: { cases?: number; log: (line: string) => void }): Promise<string> {
  const n = options.cases ?? 300;
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
    // Audio mode, on the virtual clock: the recognition bench's caller phrases (bench/recognition.ts)
    // at a node that branches on their keywords, spoken by two Flite voices: one run, 8 cases at once.
    // Baseline in the same run: one case played alone.
    const groups = [...new Map(CALLER_PHRASES.map((p) => [p.keywords.join(' '), p.keywords])).values()];
    const nodeOf = (keywords: readonly string[]) => `n${groups.findIndex((g) => g.join(' ') === keywords.join(' '))}`;
    const audioFlow = await services.agents.createFlow(account.account_id, {
      start_node_id: 'greet',
      nodes: [
        { id: 'greet', type: 'conversation', instruction: { type: 'static_text', text: 'Hello. How can I help?' }, edges: groups.map((keywords, i) => (
          { id: `e${i}`, destination_node_id: `n${i}`, transition_condition: { type: 'keyword', keywords: [...keywords] } })) },
        ...groups.map((_, i) => ({ id: `n${i}`, type: 'end', instruction: { type: 'static_text', text: 'Thank you. Goodbye.' } })),
      ],
    } as never);
    const audioAgent = await services.agents.createAgent(account.account_id, { response_engine: { type: 'conversation_flow', conversation_flow_id: audioFlow.conversation_flow_id } } as never);
    const voices = ['flite-kal16', 'flite-rms'];
    const expected = new Map<string, string>();
    const caseIds: string[] = [];
    for (const voice of voices) {
      for (const phrase of CALLER_PHRASES) {
        const created = await services.tests.createCase(account.account_id, { agent_id: audioAgent.agent_id, mode: 'audio', name: `${voice}: ${phrase.text}`, caller_voice_id: voice, caller: { script: [{ say: phrase.text }] }, assertions: [] } as never);
        expected.set(created.test_case_id, phrase.branch ? nodeOf(phrase.keywords) : 'greet');
        caseIds.push(created.test_case_id);
      }
    }
    const playRun = async (ids: string[]) => {
      const started = performance.now();
      const run = await services.tests.createRun(account.account_id, { agent_id: audioAgent.agent_id, test_case_ids: ids });
      await services.tests.settled(run.test_run_id);
      const wallS = (performance.now() - started) / 1000;
      const result = await services.tests.getRun(account.account_id, run.test_run_id);
      const speeds = result.results.map((r) => (r.simulated_ms ?? 0) / Math.max(1, r.duration_ms));
      const isRight = (r: (typeof result.results)[number]) => r.error === null && (r.node_path.at(-1) ?? 'greet') === expected.get(r.test_case_id);
      const right = result.results.filter(isRight).length;
      // Each miss, with what the recogniser gave the flow at the node (the user's side of the transcript).
      for (const r of result.results.filter((r) => !isRight(r))) {
        const heard = r.transcript.filter((u) => u.role === 'user').map((u) => u.content).join(' / ');
        options.log(`  missed: ${r.name}: heard "${heard}", ended at ${r.node_path.at(-1) ?? 'greet'}, expected ${expected.get(r.test_case_id)}; call ended: ${r.disconnection_reason}${r.error ? `; error: ${r.error}` : ''}`);
      }
      const errors = result.results.map((r) => r.error).filter(Boolean);
      const callS = result.results.reduce((sum, r) => sum + (r.simulated_ms ?? 0), 0) / 1000;
      return { wallS, callS, meanSpeed: speeds.reduce((x, y) => x + y, 0) / Math.max(1, speeds.length), right, errors, clocks: [...new Set(result.results.map((r) => r.clock))].join(',') };
    };
    const alone = await playRun(caseIds.slice(0, 1));
    options.log(`audio mode, one case alone: ${fmt(alone.meanSpeed, 2)}x real time (${fmt(alone.callS, 1)} s of call in ${fmt(alone.wallS, 1)} s; clock ${alone.clocks})`);
    const many = await playRun(caseIds);
    options.log(`audio mode, ${caseIds.length} cases, 8 at once: ${fmt(many.meanSpeed, 2)}x real time per case, ${fmt(many.callS, 1)} s of calls in ${fmt(many.wallS, 1)} s, ${many.right}/${caseIds.length} branches right; errors: ${many.errors.join('; ')}`);
    rows.push(`| audio mode (virtual clock), one case alone, PocketSphinx + Flite | ${fmt(alone.meanSpeed, 2)}x real time (${fmt(alone.callS, 1)} s of call in ${fmt(alone.wallS, 1)} s) | real time = 1x | ${fmt(alone.meanSpeed, 2)} | >= 3x per case: ${alone.meanSpeed >= 3 ? 'met' : 'not met'} |`);
    rows.push(`| audio mode (virtual clock), ${caseIds.length} cases in one run, 8 at once | per case ${fmt(many.meanSpeed, 2)}x real time; the run: ${fmt(many.callS, 1)} s of calls in ${fmt(many.wallS, 1)} s (${fmt(many.callS / many.wallS, 2)}x overall); ${many.errors.length} errors | one case alone: ${fmt(alone.meanSpeed, 2)}x | ${fmt(many.meanSpeed / Math.max(0.01, alone.meanSpeed), 2)} | >= 3x per case with 8 at once: ${many.meanSpeed >= 3 && many.errors.length === 0 ? 'met' : 'not met'} |`);
    rows.push(`| audio mode accuracy on keyword branches (the recognition bench's 10 phrases x Flite kal16, rms, wideband) | ${many.right}/${caseIds.length} branches right | recognition bench, same voices and band, with bias: see "Recognition" | | same as the recognition bench |`);
    rows.push(`| text mode, flow agent (${n} cases, one run, 8 at once) | ${fmt(perS)} cases/s | ${fmt(baselinePerS)} conversations/s | ${fmt(perS / baselinePerS, 2)} | >= 50 cases/s: ${perS >= 50 ? 'met' : 'not met'} |`);
  } finally {
    await runtime.close();
    fs.rmSync(config.dataDir, { recursive: true, force: true });
  }
  return [`${machine()}`, '', '| what | result | baseline (engine alone) | ratio | target |', '|---|---|---|---|---|', ...rows].join('\n');
}
