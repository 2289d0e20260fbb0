import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config/config.ts';
import { EnvFileError, environment } from '../config/env-file.ts';
import { isAppError } from '../domain/errors.ts';
import { createLogger } from '../lib/logger.ts';
import { createRuntime } from '../runtime.ts';
import { doctor, featureReport } from '../providers/doctor.ts';
import { inspectVectorSearch } from '../storage/knowledge-pgvector.ts';
import { CallCommandError, type CallCommandResult, type Transport, runCallCommand, runJoinCommand } from '../client/call-command.ts';
import { APIConnectionError, APIError, Switchboard, SwitchboardError } from '../../packages/node/src/index.ts';
import packageJson from '../../package.json' with { type: 'json' };
import { JoinError } from '../client/web-call-client.ts';
import fs from 'node:fs/promises';
import { AgentTestsError, runFile, runOnServer, runText } from './agent-tests.ts';
import { junitReport } from './junit.ts';

const USAGE = `usage: npm run -s cli -- [--json] <command>

  keys create [--name NAME] [--trial-ends ISO8601] [--rate-limit N] [--concurrency-limit N]
                                                                      new account and its first key
  keys create --account ID [--name NAME]                              another key for an account
  keys list --account ID                                              the account's keys (never the key itself)
  keys revoke KEY_ID                                                  revoke a key
  call --agent AGENT_ID --wav FILE [--out agent.wav] [--linger-ms 5000] [--transport websocket|webrtc] [--base-url URL] [--api-key KEY]
                                        create a web call, stream the WAV in real time, print the conversation
  join --token TOKEN [--wav FILE] [--out agent.wav] [--linger-ms 5000] [--transport websocket|webrtc] [--base-url URL]
                                        join a call created through the API with its access_token: stream the
                                        WAV (or silence until the agent ends the call, or Ctrl-C), print the conversation
  calls list [--limit N] [--agent AGENT_ID]                           the latest calls, newest first
  calls get CALL_ID                                                   one call
  test --agent AGENT_ID [--version N] [--junit report.xml] [--timeout-ms 600000] [--base-url URL] [--api-key KEY]
                                        run the agent's test cases on the server; exit 1 when one fails
  test --file agent-tests.yaml [--junit report.xml]
                                        run a file that defines the flow, the agent and its cases with no
                                        server and no network (an in-memory store); exit 1 when one fails
  doctor                                each speech engine's availability for this configuration, whether the
                                        features that need a capability (preemptive replies) can run, and which
                                        vector search knowledge bases use on the store (pgvector or in process)
  --version                             this CLI's version

The API commands (call, join, calls) take the server from --base-url or SWITCHBOARD_BASE_URL
(default http://127.0.0.1:8080) and the key from --api-key or SWITCHBOARD_API_KEY.
Output: one JSON document on stdout when stdout is not a terminal or with --json, else text for a
person; call and join print the conversation live on stderr. Errors print {"status":"error",...}
on stderr and exit 1. The store (keys) is chosen as by the server: DATA_DIR / DATABASE_URL.`;

/** A command's answer: the JSON document, and how a person reads it (default: the JSON, indented). */
interface Answer {
  json: unknown;
  text?: string;
  /** The process's exit status when not 0 (a test run with a failed case). */
  exitCode?: number;
}

type Command = (args: string[]) => Promise<unknown>;

/** Where stdout goes: a person (text) or a program (JSON). */
let human = false;

async function withRuntime<T>(work: (runtime: Awaited<ReturnType<typeof createRuntime>>) => Promise<T>): Promise<T> {
  const config = loadConfig(environment());
  // stdout carries the command's JSON answer; anything worth logging goes to stderr.
  const runtime = await createRuntime(config, { logger: createLogger({ level: config.logLevel === 'info' ? 'warn' : config.logLevel, destination: 'stderr' }) });
  try {
    return await work(runtime);
  } finally {
    await runtime.close();
  }
}

const keys: Record<string, Command> = {
  async create(args) {
    const { values } = parseArgs({
      args,
      options: {
        name: { type: 'string' },
        'trial-ends': { type: 'string' },
        'rate-limit': { type: 'string' },
        'concurrency-limit': { type: 'string' },
        account: { type: 'string' },
      },
      strict: true,
    });
    let trialEndsAt: number | null = null;
    if (values['trial-ends'] !== undefined) {
      trialEndsAt = Date.parse(values['trial-ends']);
      if (Number.isNaN(trialEndsAt)) throw new UsageError('--trial-ends must be an ISO 8601 date-time');
    }
    let rateLimit: number | undefined;
    if (values['rate-limit'] !== undefined) {
      rateLimit = Number(values['rate-limit']);
      if (!/^\d+$/.test(values['rate-limit']) || rateLimit < 1) throw new UsageError('--rate-limit must be a positive integer');
    }
    let concurrencyLimit: number | null = null;
    if (values['concurrency-limit'] !== undefined) {
      concurrencyLimit = Number(values['concurrency-limit']);
      if (!/^\d+$/.test(values['concurrency-limit']) || concurrencyLimit < 1) throw new UsageError('--concurrency-limit must be a positive integer');
    }
    return withRuntime(async ({ services }) => {
      if (values.account !== undefined) {
        if (trialEndsAt !== null || rateLimit !== undefined || concurrencyLimit !== null) {
          throw new UsageError('--trial-ends, --rate-limit and --concurrency-limit apply to new accounts, not with --account');
        }
        const created = await services.accounts.createKey(values.account, values.name ?? null);
        return { account_id: created.account_id, key_id: created.key_id, api_key: created.api_key };
      }
      const created = await services.accounts.createAccount({ name: values.name ?? null, trialEndsAt, rateLimitPerMinute: rateLimit, concurrencyLimit });
      return { account_id: created.account_id, key_id: created.key_id, api_key: created.api_key };
    });
  },
  async list(args) {
    const { values } = parseArgs({ args, options: { account: { type: 'string' } }, strict: true });
    if (!values.account) throw new UsageError('keys list needs --account ID');
    const account = values.account;
    return withRuntime(async ({ services }) => ({ keys: await services.accounts.listKeys(account) }));
  },
  async revoke(args) {
    const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true });
    const id = positionals[0];
    if (!id || positionals.length !== 1) throw new UsageError('keys revoke needs exactly one KEY_ID');
    return withRuntime(async ({ services }) => {
      await services.accounts.revokeKey(id);
      return { revoked: true, key_id: id };
    });
  },
};

const calls: Record<string, Command> = {
  async list(args) {
    const { values } = parseArgs({ args, options: { limit: { type: 'string' }, agent: { type: 'string' }, 'base-url': { type: 'string' }, 'api-key': { type: 'string' } }, strict: true });
    const limit = values.limit === undefined ? 20 : Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be an integer from 1 to 1000');
    const list = await apiClient(values['base-url'], values['api-key']).calls.list({ limit, ...(values.agent ? { filter_criteria: { agent_id: [values.agent] } } : {}) });
    const rows = list.map((c) => `${c.call_id}  ${c.call_status.padEnd(10)} ${c.disconnection_reason ?? ''}  ${new Date(c.created_at).toISOString()}  ${c.agent_name ?? c.agent_id}`);
    return { json: { calls: list }, text: rows.length === 0 ? 'no calls' : rows.join('\n') } satisfies Answer;
  },
  async get(args) {
    const { values, positionals } = parseArgs({ args, options: { 'base-url': { type: 'string' }, 'api-key': { type: 'string' } }, allowPositionals: true, strict: true });
    const id = positionals[0];
    if (!id || positionals.length !== 1) throw new UsageError('calls get needs exactly one CALL_ID');
    const call = await apiClient(values['base-url'], values['api-key']).calls.retrieve(id);
    const lines = [
      `${call.call_id}  ${call.call_status}${call.disconnection_reason ? ` (${call.disconnection_reason})` : ''}  agent ${call.agent_name ?? call.agent_id} v${call.agent_version}`,
      ...(call.duration_ms === null ? [] : [`duration ${(call.duration_ms / 1000).toFixed(1)} s`]),
      ...(call.transcript ? ['', call.transcript] : []),
    ];
    return { json: call, text: lines.join('\n') } satisfies Answer;
  },
};

const groups: Record<string, Record<string, Command>> = { keys, calls };

/** The server and key of the API commands: flags, else SWITCHBOARD_BASE_URL / SWITCHBOARD_API_KEY. */
function apiServer(baseUrl: string | undefined, apiKey: string | undefined): { baseUrl: string; apiKey: string } {
  const key = apiKey ?? environment()['SWITCHBOARD_API_KEY'];
  if (!key) throw new UsageError('no API key: pass --api-key or set SWITCHBOARD_API_KEY');
  return { baseUrl: baseUrlOf(baseUrl), apiKey: key };
}

function baseUrlOf(flag: string | undefined): string {
  const url = flag ?? environment()['SWITCHBOARD_BASE_URL'] ?? 'http://127.0.0.1:8080';
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) throw new UsageError(`the server must be an http(s) URL: ${url}`);
  return url;
}

function apiClient(baseUrl: string | undefined, apiKey: string | undefined): Switchboard {
  return new Switchboard({ ...apiServer(baseUrl, apiKey), maxRetries: 1 });
}

function lingerOption(text: string | undefined): { lingerMs?: number } {
  if (text === undefined) return {};
  const linger = Number(text);
  if (!Number.isInteger(linger) || linger < 0) throw new UsageError('--linger-ms must be a non-negative integer');
  return { lingerMs: linger };
}

/** A line of the live conversation, on stderr (stdout is the answer). */
function live(line: string): void {
  process.stderr.write(`${line}\n`);
}

function callAnswer(result: CallCommandResult): Answer {
  const turns = result.transcript.length;
  return { json: result, text: `${result.call_id}: ${result.call_status} (${result.disconnection_reason}), ${turns} utterance${turns === 1 ? '' : 's'}` };
}


/** Commands without a sub-command. */
const commands: Record<string, Command> = {
  async call(args) {
    const { values } = parseArgs({
      args,
      options: {
        'base-url': { type: 'string' }, 'api-key': { type: 'string' }, agent: { type: 'string' },
        wav: { type: 'string' }, out: { type: 'string' }, 'linger-ms': { type: 'string' }, transport: { type: 'string' },
      },
      strict: true,
    });
    for (const name of ['agent', 'wav'] as const) {
      if (!values[name]) throw new UsageError(`call needs --${name}`);
    }
    const server = apiServer(values['base-url'], values['api-key']);
    const result = await runCallCommand({
      ...server, agentId: values.agent!, wavFile: values.wav!,
      ...(values.out ? { outFile: values.out } : {}),
      ...lingerOption(values['linger-ms']),
      transport: transportOption(values.transport),
      onLine: live,
    });
    return callAnswer(result);
  },
  async join(args) {
    const { values } = parseArgs({
      args,
      options: { 'base-url': { type: 'string' }, token: { type: 'string' }, wav: { type: 'string' }, out: { type: 'string' }, 'linger-ms': { type: 'string' }, transport: { type: 'string' } },
      strict: true,
    });
    if (!values.token) throw new UsageError('join needs --token (the access_token of create-web-call)');
    const stop = new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
    const result = await runJoinCommand({
      baseUrl: baseUrlOf(values['base-url']), accessToken: values.token,
      ...(values.wav ? { wavFile: values.wav } : {}),
      ...(values.out ? { outFile: values.out } : {}),
      ...lingerOption(values['linger-ms']),
      transport: transportOption(values.transport),
      onLine: live,
      stop,
    });
    return callAnswer(result);
  },
  async test(args) {
    const { values } = parseArgs({
      args,
      options: {
        agent: { type: 'string' }, version: { type: 'string' }, file: { type: 'string' }, junit: { type: 'string' },
        'timeout-ms': { type: 'string' }, 'base-url': { type: 'string' }, 'api-key': { type: 'string' },
      },
      strict: true,
    });
    if ((values.agent === undefined) === (values.file === undefined)) throw new UsageError('test needs exactly one of --agent AGENT_ID and --file FILE');
    let run;
    if (values.file !== undefined) {
      const config = loadConfig();
      run = await runFile(values.file, config, createLogger({ level: 'warn', destination: 'stderr' }));
    } else {
      const version = values.version === undefined ? undefined : Number(values.version);
      if (version !== undefined && (!Number.isInteger(version) || version < 1)) throw new UsageError('--version must be a positive integer');
      const timeoutMs = values['timeout-ms'] === undefined ? 600_000 : Number(values['timeout-ms']);
      if (!Number.isInteger(timeoutMs) || timeoutMs < 1) throw new UsageError('--timeout-ms must be a positive integer');
      run = await runOnServer({ ...apiServer(values['base-url'], values['api-key']), agentId: values.agent!, ...(version === undefined ? {} : { agentVersion: version }), timeoutMs });
    }
    if (values.junit !== undefined) await fs.writeFile(values.junit, junitReport(run, values.file ?? `agent ${run.agent_id}`));
    return { json: run, text: runText(run), ...(run.failed > 0 ? { exitCode: 1 } : {}) } satisfies Answer;
  },
  async doctor(args) {
    parseArgs({ args, options: {}, strict: true });
    const config = loadConfig(environment());
    const { providers, providerProbeTimeoutMs } = config.media;
    const [engines, knowledge] = await Promise.all([doctor(providers, providerProbeTimeoutMs, config.knowledge.embeddings), knowledgeVectorSearch(config.databaseUrl, config.knowledge.embeddings !== null)]);
    return { ok: engines.every((e) => !e.selected || e.available) && knowledge.vector_search !== 'unknown', engines, features: featureReport(providers), knowledge };
  },
};

/** How long `cli doctor` waits for the PostgreSQL store to connect, and for each of its answers. */
const DOCTOR_DATABASE_TIMEOUT_MS = 5_000;

/**
 * `cli doctor`'s knowledge line (issue 29): which vector search hybrid retrieval uses on this
 * store. PostgreSQL: pgvector where the server has it (or our role can create it), else the scan in
 * the process (knowledge-pgvector.ts; found without changing the database); SQLite: in the process.
 */
async function knowledgeVectorSearch(databaseUrl: string | null, embeddings: boolean): Promise<{ store: 'sqlite' | 'postgresql'; vector_search: 'pgvector' | 'in_process' | 'unknown'; detail: string }> {
  const use = embeddings ? 'hybrid retrieval ranks by vector' : 'used once EMBEDDINGS_BASE_URL is set (now lexical retrieval only)';
  if (databaseUrl === null) return { store: 'sqlite', vector_search: 'in_process', detail: `SQLite: vectors are searched in the process; ${use}` };
  try {
    const found = await inspectVectorSearch(databaseUrl, DOCTOR_DATABASE_TIMEOUT_MS);
    return found.search === 'pgvector'
      ? { store: 'postgresql', vector_search: 'pgvector', detail: `pgvector ${found.version}: vectors are searched in the database; ${use}` }
      : { store: 'postgresql', vector_search: 'in_process', detail: `vectors are searched in the process: ${found.reason}; ${use}` };
  } catch (error) {
    // pg's messages name the host and the role at most, never the password.
    return { store: 'postgresql', vector_search: 'unknown', detail: `the database could not be asked: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** `--transport`: `websocket` (default) or `webrtc`. */
function transportOption(raw: string | undefined): Transport {
  if (raw === undefined || raw === 'websocket' || raw === 'webrtc') return raw ?? 'websocket';
  throw new UsageError('--transport must be websocket or webrtc');
}

/** The version of the CLI (and the server): package.json's. */
const VERSION = packageJson.version;

class UsageError extends Error {}

function isAnswer(value: unknown): value is Answer {
  return typeof value === 'object' && value !== null && 'json' in value && Object.keys(value).every((k) => k === 'json' || k === 'text' || k === 'exitCode');
}

async function run(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  human = !json && process.stdout.isTTY === true;
  const [group, command, ...rest] = argv.filter((arg) => arg !== '--json');
  if (group === '--version' || group === '-v' || group === 'version') {
    process.stdout.write(json ? `${JSON.stringify({ version: VERSION })}\n` : `switchboard ${VERSION}\n`);
    return 0;
  }
  if (!group || group === 'help' || group === '--help') {
    process.stdout.write(`${USAGE}\n`);
    return group ? 0 : 2;
  }
  const single = commands[group];
  const handler: Command | undefined = single ? (args) => single(command === undefined ? args : [command, ...args]) : groups[group]?.[command ?? ''];
  try {
    if (!handler) throw new UsageError(`unknown command: ${[group, command].filter(Boolean).join(' ')}`);
    const result = await handler(rest);
    const answer: Answer = isAnswer(result) ? result : { json: result };
    process.stdout.write(human ? `${answer.text ?? JSON.stringify(answer.json, null, 2)}\n` : `${JSON.stringify(answer.json)}\n`);
    return answer.exitCode ?? 0;
  } catch (error) {
    const message =
      error instanceof UsageError || error instanceof ConfigError || error instanceof EnvFileError || isAppError(error) || error instanceof AgentTestsError || error instanceof CallCommandError || error instanceof JoinError || error instanceof SwitchboardError
        ? error.message
        : error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')
          ? error.message
          : `unexpected failure: ${error instanceof Error ? error.message : String(error)}`;
    const code = isAppError(error) || error instanceof AgentTestsError || error instanceof CallCommandError || error instanceof JoinError || error instanceof APIError
      ? error.code
      : error instanceof APIConnectionError ? 'connection_failed' : error instanceof UsageError ? 'usage' : 'failed';
    process.stderr.write(`${JSON.stringify({ status: 'error', code, message })}\n`);
    if (error instanceof UsageError) process.stderr.write(`${USAGE}\n`);
    return 1;
  }
}

process.exitCode = await run(process.argv.slice(2));
