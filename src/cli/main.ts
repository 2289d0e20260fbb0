import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config/config.ts';
import { isAppError } from '../domain/errors.ts';
import { createLogger } from '../lib/logger.ts';
import { createRuntime } from '../runtime.ts';
import { doctor } from '../providers/doctor.ts';
import { CallCommandError, runCallCommand } from '../client/call-command.ts';
import { JoinError } from '../client/web-call-client.ts';

const USAGE = `usage: npm run -s cli -- <command>

  keys create [--name NAME] [--trial-ends ISO8601] [--rate-limit N] [--concurrency-limit N]
                                                                      new account and its first key
  keys create --account ID [--name NAME]                              another key for an account
  keys list --account ID                                              the account's keys (never the key itself)
  keys revoke KEY_ID                                                  revoke a key
  call --base-url URL --api-key KEY --agent AGENT_ID --wav FILE [--out agent.wav] [--linger-ms 5000]
                                        create a web call, stream the WAV in real time, print the outcome
  doctor                                each speech engine's availability for this configuration

Each command prints one JSON document on stdout; errors print {"status":"error",...} on stderr and exit 1.
The store is chosen as by the server: DATA_DIR / DATABASE_URL.`;

type Command = (args: string[]) => Promise<unknown>;

async function withRuntime<T>(work: (runtime: Awaited<ReturnType<typeof createRuntime>>) => Promise<T>): Promise<T> {
  const config = loadConfig();
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

const groups: Record<string, Record<string, Command>> = { keys };

/** Commands without a sub-command. */
const commands: Record<string, Command> = {
  async call(args) {
    const { values } = parseArgs({
      args,
      options: {
        'base-url': { type: 'string' }, 'api-key': { type: 'string' }, agent: { type: 'string' },
        wav: { type: 'string' }, out: { type: 'string' }, 'linger-ms': { type: 'string' },
      },
      strict: true,
    });
    for (const name of ['base-url', 'api-key', 'agent', 'wav'] as const) {
      if (!values[name]) throw new UsageError(`call needs --${name}`);
    }
    const linger = values['linger-ms'] === undefined ? undefined : Number(values['linger-ms']);
    if (linger !== undefined && (!Number.isInteger(linger) || linger < 0)) throw new UsageError('--linger-ms must be a non-negative integer');
    return runCallCommand({
        baseUrl: values['base-url']!, apiKey: values['api-key']!, agentId: values.agent!, wavFile: values.wav!,
        ...(values.out ? { outFile: values.out } : {}),
        ...(linger !== undefined ? { lingerMs: linger } : {}),
    });
  },
  async doctor(args) {
    parseArgs({ args, options: {}, strict: true });
    const engines = await doctor(loadConfig().media.providers);
    return { ok: engines.every((e) => !e.selected || e.available), engines };
  },
};

class UsageError extends Error {}

async function run(argv: string[]): Promise<number> {
  const [group, command, ...rest] = argv;
  if (!group || group === 'help' || group === '--help') {
    process.stdout.write(`${USAGE}\n`);
    return group ? 0 : 2;
  }
  const single = commands[group];
  const handler: Command | undefined = single ? (args) => single(command === undefined ? args : [command, ...args]) : groups[group]?.[command ?? ''];
  try {
    if (!handler) throw new UsageError(`unknown command: ${[group, command].filter(Boolean).join(' ')}`);
    const result = await handler(rest);
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } catch (error) {
    const message =
      error instanceof UsageError || error instanceof ConfigError || isAppError(error) || error instanceof CallCommandError || error instanceof JoinError
        ? error.message
        : error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')
          ? error.message
          : `unexpected failure: ${error instanceof Error ? error.message : String(error)}`;
    const code = isAppError(error) || error instanceof CallCommandError || error instanceof JoinError ? error.code : error instanceof UsageError ? 'usage' : 'failed';
    process.stderr.write(`${JSON.stringify({ status: 'error', code, message })}\n`);
    if (error instanceof UsageError) process.stderr.write(`${USAGE}\n`);
    return 1;
  }
}

process.exitCode = await run(process.argv.slice(2));
