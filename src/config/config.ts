import path from 'node:path';
import ipaddr from 'ipaddr.js';
import { type Env, EnvReader } from './env-reader.ts';
import { type MediaConfig, readMediaConfig } from './media.config.ts';
import { type RtcConfig, readRtcConfig } from './rtc.config.ts';
import { type WebhookConfig, readWebhookConfig } from './webhook.config.ts';
import { type SipConfig, readSipConfig } from './sip.config.ts';
import { type KnowledgeConfig, readKnowledgeConfig } from './knowledge.config.ts';

/** The service's whole configuration, parsed once at start-up from the environment. */
export interface Config {
  /** TCP port of the HTTP server (PORT, default 8080; 0 picks a free one). */
  readonly port: number;
  /** Address the HTTP server binds (HOST, default 127.0.0.1). */
  readonly host: string;
  /** Directory for the SQLite file, recordings and the generated server keys (DATA_DIR, default ./data). */
  readonly dataDir: string;
  /** A postgres:// URL switches the store to PostgreSQL (DATABASE_URL). */
  readonly databaseUrl: string | null;
  /** Connections in the PostgreSQL pool (DATABASE_POOL_SIZE, default 10). */
  readonly databasePoolSize: number;
  /** pino level (LOG_LEVEL, default info). */
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** LOG_FORMAT: `json` lines, `pretty` lines for people, or `auto` (default): pretty when stdout is a terminal. */
  readonly logFormat: 'auto' | 'json' | 'pretty';
  /** How long a web call's access token may go unused (ACCESS_TOKEN_TTL_MS, default 30000). */
  readonly accessTokenTtlMs: number;
  /**
   * How long a call's signed `recording_url` plays without an API key after the call is read
   * (RECORDING_URL_TTL_MS, default 259200000: 72 h, which covers the default webhook retry schedule
   * of about 28 h, a `call.finished` payload's link being made when the event is written, plus two
   * days for the consumer to fetch it; at most 30 days).
   */
  readonly recordingUrlTtlMs: number;
  /** How often calls whose token expired unused are marked as errors (TOKEN_SWEEP_INTERVAL_MS, default 1000). */
  readonly tokenSweepIntervalMs: number;
  /**
   * How long the server holding an ongoing call may go without renewing its lease before another
   * server (or, on SQLite, the next start) ends the call `error_server_lost` (CALL_LEASE_TTL_MS,
   * default 15000). The lease is renewed every third of this.
   */
  readonly callLeaseTtlMs: number;
  /** How often this server looks for calls whose lease lapsed, to end them (CALL_RECOVERY_INTERVAL_MS, default 5000). */
  readonly callRecoveryIntervalMs: number;
  /** Default create-web-call requests per minute for new accounts (DEFAULT_RATE_LIMIT_PER_MINUTE, default 600). */
  readonly defaultRateLimitPerMinute: number;
  /** How long graceful shutdown waits for in-flight work (SHUTDOWN_TIMEOUT_MS, default 10000). */
  readonly shutdownTimeoutMs: number;
  /** How long a checked API key is trusted before the store is asked again (API_KEY_CACHE_TTL_MS, default 2000; 0 disables). Revocation in the same process takes effect at once. */
  readonly apiKeyCacheTtlMs: number;
  /** The address clients use to reach this server, for URLs the API hands out (PUBLIC_BASE_URL, default http://HOST:PORT). */
  readonly publicBaseUrl: string;
  /** The operator API key the /demo page's server side creates calls with (DEMO_API_KEY); null disables the demo. */
  readonly demoApiKey: string | null;
  /** New demo calls per minute per client address, a /64 for IPv6 (DEMO_RATE_LIMIT_PER_MINUTE, default 10). */
  readonly demoRateLimitPerMinute: number;
  /** Demo calls registered or in progress at once, per process (DEMO_MAX_CONCURRENT_CALLS, default 10). */
  readonly demoMaxConcurrentCalls: number;
  /** Time limits on clients' connections and whom to believe about their address (HTTP_*, TRUST_PROXY). */
  readonly http: HttpConfig;
  /** Webhook delivery: secret keys, SSRF allow-list, timeouts, retry schedule, worker (WEBHOOK_*). */
  readonly webhooks: WebhookConfig;
  /** Speech and language engines: LLM_*, STT_*, TTS_*, VAD_PROVIDER (see src/config/media.config.ts). */
  readonly media: MediaConfig;
  /** Twilio numbers (issue 24): the REST API's base (TWILIO_API_BASE_URL, default https://api.twilio.com; a regional edge, or a test server). */
  readonly twilio: { readonly apiBaseUrl: string };
  /** The SIP endpoint (SIP_*, docs/telephony.md); null when SIP_PORT is not set. */
  readonly sip: SipConfig | null;
  /** WebRTC web calls: ICE servers, UDP ports, advertised address, ICE-TCP (RTC_*, src/config/rtc.config.ts). */
  readonly rtc: RtcConfig;
  /** Knowledge-base retrieval: the embeddings endpoint, when any (EMBEDDINGS_*, src/config/knowledge.config.ts). */
  readonly knowledge: KnowledgeConfig;
}

/** The HTTP server's limits on clients (src/http/connections.ts applies them). */
export interface HttpConfig {
  /** A request's headers must arrive within this of its first byte (HTTP_HEADERS_TIMEOUT_MS, default 10000). */
  readonly headersTimeoutMs: number;
  /** A request's whole body must arrive within this of its first byte (HTTP_REQUEST_TIMEOUT_MS, default 30000; at least the headers timeout). */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this (HTTP_KEEP_ALIVE_TIMEOUT_MS, default 72000). */
  readonly keepAliveTimeoutMs: number;
  /**
   * Whether X-Forwarded-For names the client (TRUST_PROXY, default false: the socket's address
   * is the client's). true trusts every proxy, a number that many hops, a list the proxies at
   * those addresses or ranges (and `loopback`, `linklocal`, `uniquelocal`).
   */
  readonly trustProxy: boolean | number | string[];
}

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Parses and validates the environment; throws one ConfigError naming every bad variable. */
export function loadConfig(env: Env = process.env, cwd = process.cwd()): Config {
  const problems: string[] = [];
  const reader = new EnvReader(env, problems);

  const port = reader.integer('PORT', 8080, 0, 65535);
  const host = reader.string('HOST', '127.0.0.1');
  const dataDir = path.resolve(cwd, reader.string('DATA_DIR', './data'));
  const databaseUrl = reader.optional('DATABASE_URL');
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL must be a postgres:// or postgresql:// URL');
  }
  const logLevel = reader.oneOf('LOG_LEVEL', 'info', LOG_LEVELS);
  const logFormat = reader.oneOf('LOG_FORMAT', 'auto', ['auto', 'json', 'pretty'] as const);
  const demoApiKey = reader.optional('DEMO_API_KEY');
  if (demoApiKey !== null && !/^sb_[A-Za-z0-9_-]{43}$/.test(demoApiKey)) {
    problems.push('DEMO_API_KEY must be an API key (sb_ followed by 43 characters; create one with `npm run -s cli -- keys create`)');
  }
  const config: Config = {
    port,
    host,
    dataDir,
    databaseUrl,
    databasePoolSize: reader.integer('DATABASE_POOL_SIZE', 10, 1, 1000),
    logLevel,
    logFormat,
    accessTokenTtlMs: reader.integer('ACCESS_TOKEN_TTL_MS', 30_000, 1_000, 86_400_000),
    recordingUrlTtlMs: reader.integer('RECORDING_URL_TTL_MS', 259_200_000, 1_000, 2_592_000_000),
    tokenSweepIntervalMs: reader.integer('TOKEN_SWEEP_INTERVAL_MS', 1_000, 10, 3_600_000),
    callLeaseTtlMs: reader.integer('CALL_LEASE_TTL_MS', 15_000, 300, 600_000),
    callRecoveryIntervalMs: reader.integer('CALL_RECOVERY_INTERVAL_MS', 5_000, 50, 600_000),
    defaultRateLimitPerMinute: reader.integer('DEFAULT_RATE_LIMIT_PER_MINUTE', 600, 1, 10_000_000),
    shutdownTimeoutMs: reader.integer('SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    apiKeyCacheTtlMs: reader.integer('API_KEY_CACHE_TTL_MS', 2_000, 0, 60_000),
    publicBaseUrl: reader.url('PUBLIC_BASE_URL', `http://${host.includes(':') ? `[${host}]` : host}:${port}`),
    demoApiKey,
    demoRateLimitPerMinute: reader.integer('DEMO_RATE_LIMIT_PER_MINUTE', 10, 1, 1_000_000),
    demoMaxConcurrentCalls: reader.integer('DEMO_MAX_CONCURRENT_CALLS', 10, 1, 100_000),
    http: readHttpConfig(reader, problems),
    webhooks: readWebhookConfig(reader, problems, databaseUrl !== null),
    media: readMediaConfig(reader, problems),
    twilio: { apiBaseUrl: reader.url('TWILIO_API_BASE_URL', 'https://api.twilio.com') },
    sip: readSipConfig(reader, problems, host),
    rtc: readRtcConfig(reader, problems),
    knowledge: readKnowledgeConfig(reader),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function readHttpConfig(reader: EnvReader, problems: string[]): HttpConfig {
  const headersTimeoutMs = reader.integer('HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000);
  const requestTimeoutMs = reader.integer('HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000);
  if (requestTimeoutMs < headersTimeoutMs) {
    problems.push(`HTTP_REQUEST_TIMEOUT_MS (${requestTimeoutMs}) must be at least HTTP_HEADERS_TIMEOUT_MS (${headersTimeoutMs})`);
  }
  return {
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: reader.integer('HTTP_KEEP_ALIVE_TIMEOUT_MS', 72_000, 100, 3_600_000),
    trustProxy: readTrustProxy(reader, problems),
  };
}

function readTrustProxy(reader: EnvReader, problems: string[]): boolean | number | string[] {
  const raw = reader.optional('TRUST_PROXY');
  if (raw === null) return false;
  if (/^\d+$/.test(raw.trim())) return reader.integer('TRUST_PROXY', 0, 0, 100);
  if (['true', 'false'].includes(raw.toLowerCase())) return reader.boolean('TRUST_PROXY', false);
  const entries = reader.list('TRUST_PROXY');
  const bad = entries.filter((entry) => !PROXY_NAMES.has(entry) && !isAddressOrRange(entry));
  if (bad.length > 0 || entries.length === 0) {
    problems.push(`TRUST_PROXY must be true, false, a number of hops, or addresses and CIDR ranges of the proxies (got "${raw}")`);
    return false;
  }
  return entries;
}

function isAddressOrRange(entry: string): boolean {
  if (ipaddr.isValid(entry)) return true;
  try {
    ipaddr.parseCIDR(entry);
    return true;
  } catch {
    return false;
  }
}
