/**
 * The Switchboard API client: one method per operation, grouped by resource, over `fetch`.
 * Failed requests are retried with exponential backoff and jitter (429 honouring `Retry-After`,
 * 408, 409, 5xx and connection errors; the server's `X-Should-Retry` decides when present);
 * create-web-call carries an `Idempotency-Key`, the same on every retry, so a retry cannot create
 * a second call.
 */
import { APIConnectionError, APIError, APITimeoutError, SwitchboardError } from './errors.ts';
import type {
  Agent,
  AgentWebhookSecret,
  Call,
  ConversationFlow,
  CreateAgentParams,
  CreateConversationFlowParams,
  CreateLeadParams,
  CreateServiceLlmParams,
  CreateTicketParams,
  CreateWebCallParams,
  DeletedWebhook,
  Lead,
  LeadPage,
  ListCallsParams,
  ListDeliveriesParams,
  ListTicketsParams,
  PageParams,
  ServiceLlm,
  SetWebhookParams,
  Ticket,
  TicketPage,
  UpdateAgentParams,
  UpdateCallParams,
  UpdateConversationFlowParams,
  UpdateLeadParams,
  UpdateServiceLlmParams,
  Webhook,
  WebhookDelivery,
  WebhookDeliveryPage,
  WebhookList,
} from './types.ts';

/** The package's version, sent as `User-Agent: switchboard-node/<version>`. */
export const VERSION = '0.1.0';

export interface ClientOptions {
  /** An API key, `sb_...` (default: the SWITCHBOARD_API_KEY environment variable). */
  apiKey?: string;
  /** The server, e.g. `https://voice.example.com` (default: SWITCHBOARD_BASE_URL, else http://127.0.0.1:8080). */
  baseUrl?: string;
  /** Per attempt, in ms (default 60 000). */
  timeoutMs?: number;
  /** Retries after the first attempt (default 2). */
  maxRetries?: number;
  /** The fetch to use (default globalThis.fetch). */
  fetch?: typeof fetch;
}

/** Per-request overrides. */
export interface RequestOptions {
  timeoutMs?: number;
  maxRetries?: number;
  /** Aborts the request (and its retries). */
  signal?: AbortSignal;
  /** create-web-call only: the idempotency key (default: a new random one per call of the method). */
  idempotencyKey?: string;
}

interface Request {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
}

/** Longest wait between attempts, and the longest `Retry-After` honoured, in ms. */
const MAX_RETRY_DELAY_MS = 60_000;
/** First backoff step, in ms; doubles per retry up to 8 s, less up to 25 % jitter. */
const INITIAL_RETRY_DELAY_MS = 500;
const MAX_BACKOFF_MS = 8_000;

/**
 * How long to wait before retry number `retry` (1-based), in ms: the server's `Retry-After`
 * (seconds or an HTTP date) when it gives one of at most 60 s, else exponential backoff with jitter.
 */
export function retryDelayMs(retry: number, headers: Headers | null, random: () => number = Math.random, nowMs = Date.now()): number {
  const after = headers?.get('retry-after');
  if (after) {
    const seconds = /^\d+(\.\d+)?$/.test(after.trim()) ? Number(after) * 1000 : Date.parse(after) - nowMs;
    if (Number.isFinite(seconds) && seconds >= 0 && seconds <= MAX_RETRY_DELAY_MS) return Math.round(seconds);
  }
  const backoff = Math.min(INITIAL_RETRY_DELAY_MS * 2 ** (retry - 1), MAX_BACKOFF_MS);
  return Math.round(backoff * (1 - 0.25 * random()));
}

/** Whether an answer with `status` is worth another attempt; the server's `X-Should-Retry` wins. */
export function shouldRetry(status: number, headers: Headers): boolean {
  const verdict = headers.get('x-should-retry');
  if (verdict === 'true') return true;
  if (verdict === 'false') return false;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * ```ts
 * import { Switchboard } from '@switchboard/node';
 * const switchboard = new Switchboard(); // SWITCHBOARD_API_KEY, SWITCHBOARD_BASE_URL
 * const call = await switchboard.calls.createWebCall({ agent_id: 'agent_...' });
 * // hand call.access_token to the page (@switchboard/web-sdk)
 * ```
 */
export class Switchboard {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly maxRetries: number;
  readonly #apiKey: string;
  readonly #fetch: typeof fetch;

  readonly calls = new Calls(this);
  readonly agents = new Agents(this);
  readonly conversationFlows = new ConversationFlows(this);
  readonly serviceLlms = new ServiceLlms(this);
  readonly webhooks = new Webhooks(this);
  readonly leads = new Leads(this);
  readonly tickets = new Tickets(this);

  constructor(options: ClientOptions = {}) {
    const env = typeof process === 'undefined' ? {} : process.env;
    const apiKey = options.apiKey ?? env.SWITCHBOARD_API_KEY;
    if (!apiKey) throw new SwitchboardError('No API key: pass { apiKey } or set SWITCHBOARD_API_KEY.');
    this.#apiKey = apiKey;
    this.baseUrl = (options.baseUrl ?? env.SWITCHBOARD_BASE_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.maxRetries = options.maxRetries ?? 2;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** Sends one operation, with its retries; resolves with the parsed answer (undefined for 204). */
  async request<T>(request: Request, options: RequestOptions = {}): Promise<T> {
    const url = new URL(this.baseUrl + request.path);
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#apiKey}`,
      accept: 'application/json',
      'user-agent': `switchboard-node/${VERSION}`,
      ...request.headers,
    };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    const body = request.body === undefined ? undefined : JSON.stringify(request.body);
    const maxRetries = options.maxRetries ?? this.maxRetries;
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;

    for (let attempt = 0; ; attempt++) {
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
      let response: Response;
      try {
        response = await this.#fetch(url, { method: request.method, headers, body, signal });
      } catch (error) {
        if (options.signal?.aborted) throw error;
        const timedOut = timeout.aborted;
        if (attempt < maxRetries) {
          await sleep(retryDelayMs(attempt + 1, null), options.signal);
          continue;
        }
        const what = `${request.method} ${request.path}`;
        throw timedOut
          ? new APITimeoutError(`${what}: no answer within ${timeoutMs} ms`, { cause: error })
          : new APIConnectionError(`${what}: cannot reach ${this.baseUrl}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
      if (response.ok) {
        if (response.status === 204) return undefined as T;
        const type = response.headers.get('content-type') ?? '';
        return (type.includes('application/json') ? await response.json() : await response.arrayBuffer()) as T;
      }
      const text = await response.text().catch(() => '');
      if (attempt < maxRetries && shouldRetry(response.status, response.headers)) {
        await sleep(retryDelayMs(attempt + 1, response.headers), options.signal);
        continue;
      }
      throw APIError.from(response.status, parseError(text), response.headers);
    }
  }
}

function parseError(text: string): { code?: string; message?: string } | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    }, { once: true });
  });
}

const id = (value: string) => encodeURIComponent(value);

/** Web calls. */
export class Calls {
  readonly #client: Switchboard;
  constructor(client: Switchboard) {
    this.#client = client;
  }

  /**
   * Creates a web call; answers it with its single-use `access_token` (valid 30 s) for the page.
   * Sends an `Idempotency-Key` (random unless given), the same on each retry.
   */
  createWebCall(params: CreateWebCallParams, options: RequestOptions = {}): Promise<Call> {
    const key = options.idempotencyKey ?? crypto.randomUUID();
    return this.#client.request({ method: 'POST', path: '/v2/create-web-call', body: params, headers: { 'idempotency-key': key } }, options);
  }
  retrieve(callId: string, options?: RequestOptions): Promise<Call> {
    return this.#client.request({ method: 'GET', path: `/v2/get-call/${id(callId)}` }, options);
  }
  update(callId: string, params: UpdateCallParams, options?: RequestOptions): Promise<Call> {
    return this.#client.request({ method: 'PATCH', path: `/v2/update-call/${id(callId)}`, body: params }, options);
  }
  /** Newest first by default; `pagination_key` is the last `call_id` of the previous page. */
  list(params: ListCallsParams = {}, options?: RequestOptions): Promise<Call[]> {
    return this.#client.request({ method: 'POST', path: '/v2/list-calls', body: params }, options);
  }
  delete(callId: string, options?: RequestOptions): Promise<void> {
    return this.#client.request({ method: 'DELETE', path: `/v2/delete-call/${id(callId)}` }, options);
  }
  /** The recording, a stereo 16 kHz WAV (user left, agent right). */
  async recording(callId: string, options?: RequestOptions): Promise<Uint8Array> {
    return new Uint8Array(await this.#client.request<ArrayBuffer>({ method: 'GET', path: `/v2/get-call-recording/${id(callId)}` }, options));
  }
}

/** Agents: every update makes a version; calls pin one. */
export class Agents {
  readonly #client: Switchboard;
  constructor(client: Switchboard) {
    this.#client = client;
  }
  create(params: CreateAgentParams, options?: RequestOptions): Promise<Agent> {
    return this.#client.request({ method: 'POST', path: '/create-agent', body: params }, options);
  }
  /** The latest version, or `version`. */
  retrieve(agentId: string, query: { version?: number } = {}, options?: RequestOptions): Promise<Agent> {
    return this.#client.request({ method: 'GET', path: `/get-agent/${id(agentId)}`, query }, options);
  }
  update(agentId: string, params: UpdateAgentParams, options?: RequestOptions): Promise<Agent> {
    return this.#client.request({ method: 'PATCH', path: `/update-agent/${id(agentId)}`, body: params }, options);
  }
  list(options?: RequestOptions): Promise<Agent[]> {
    return this.#client.request({ method: 'GET', path: '/list-agents' }, options);
  }
  delete(agentId: string, options?: RequestOptions): Promise<void> {
    return this.#client.request({ method: 'DELETE', path: `/delete-agent/${id(agentId)}` }, options);
  }
  /** Every version, oldest first. */
  versions(agentId: string, options?: RequestOptions): Promise<Agent[]> {
    return this.#client.request({ method: 'GET', path: `/get-agent-versions/${id(agentId)}` }, options);
  }
}

/** Conversation flows. */
export class ConversationFlows {
  readonly #client: Switchboard;
  constructor(client: Switchboard) {
    this.#client = client;
  }
  create(params: CreateConversationFlowParams, options?: RequestOptions): Promise<ConversationFlow> {
    return this.#client.request({ method: 'POST', path: '/create-conversation-flow', body: params }, options);
  }
  retrieve(flowId: string, options?: RequestOptions): Promise<ConversationFlow> {
    return this.#client.request({ method: 'GET', path: `/get-conversation-flow/${id(flowId)}` }, options);
  }
  update(flowId: string, params: UpdateConversationFlowParams, options?: RequestOptions): Promise<ConversationFlow> {
    return this.#client.request({ method: 'PATCH', path: `/update-conversation-flow/${id(flowId)}`, body: params }, options);
  }
  list(options?: RequestOptions): Promise<ConversationFlow[]> {
    return this.#client.request({ method: 'GET', path: '/list-conversation-flows' }, options);
  }
  /** Refused (ConflictError) while an agent uses it. */
  delete(flowId: string, options?: RequestOptions): Promise<void> {
    return this.#client.request({ method: 'DELETE', path: `/delete-conversation-flow/${id(flowId)}` }, options);
  }
}

/** Service LLMs. */
export class ServiceLlms {
  readonly #client: Switchboard;
  constructor(client: Switchboard) {
    this.#client = client;
  }
  create(params: CreateServiceLlmParams, options?: RequestOptions): Promise<ServiceLlm> {
    return this.#client.request({ method: 'POST', path: '/create-service-llm', body: params }, options);
  }
  retrieve(llmId: string, options?: RequestOptions): Promise<ServiceLlm> {
    return this.#client.request({ method: 'GET', path: `/get-service-llm/${id(llmId)}` }, options);
  }
  update(llmId: string, params: UpdateServiceLlmParams, options?: RequestOptions): Promise<ServiceLlm> {
    return this.#client.request({ method: 'PATCH', path: `/update-service-llm/${id(llmId)}`, body: params }, options);
  }
  list(options?: RequestOptions): Promise<ServiceLlm[]> {
    return this.#client.request({ method: 'GET', path: '/list-service-llms' }, options);
  }
  /** Refused (ConflictError) while an agent uses it. */
  delete(llmId: string, options?: RequestOptions): Promise<void> {
    return this.#client.request({ method: 'DELETE', path: `/delete-service-llm/${id(llmId)}` }, options);
  }
}

/** The account's webhooks and their delivery log. */
export class Webhooks {
  readonly #client: Switchboard;
  constructor(client: Switchboard) {
    this.#client = client;
  }
  /** Creates a webhook (its `secret` is in this answer only), or updates the one with this `id` or `url`. */
  set(params: SetWebhookParams, options?: RequestOptions): Promise<Webhook> {
    return this.#client.request({ method: 'POST', path: '/api/v1/webhooks/set.php', body: params }, options);
  }
  list(options?: RequestOptions): Promise<WebhookList> {
    return this.#client.request({ method: 'GET', path: '/api/v1/webhooks/list.php' }, options);
  }
  delete(target: { id: string } | { url: string }, options?: RequestOptions): Promise<DeletedWebhook> {
    return this.#client.request({ method: 'POST', path: '/api/v1/webhooks/delete.php', body: target }, options);
  }
  /** The delivery log, newest first, each delivery with its attempts. */
  deliveries(params: ListDeliveriesParams = {}, options?: RequestOptions): Promise<WebhookDeliveryPage> {
    return this.#client.request({ method: 'GET', path: '/api/v1/webhooks/deliveries.php', query: params }, options);
  }
  /** Queues one more attempt of a delivery now, with the same webhook-id. */
  redeliver(deliveryId: string, options?: RequestOptions): Promise<WebhookDelivery> {
    return this.#client.request({ method: 'POST', path: '/api/v1/webhooks/redeliver.php', body: { delivery_id: deliveryId } }, options);
  }
  /** The secret that signs deliveries to agents' `webhook_url`. */
  agentSecret(options?: RequestOptions): Promise<AgentWebhookSecret> {
    return this.#client.request({ method: 'GET', path: '/api/v1/webhooks/agent-secret.php' }, options);
  }
  rotateAgentSecret(options?: RequestOptions): Promise<AgentWebhookSecret> {
    return this.#client.request({ method: 'POST', path: '/api/v1/webhooks/agent-secret.php', body: {} }, options);
  }
}

/** Leads (contacts). */
export class Leads {
  readonly #client: Switchboard;
  constructor(client: Switchboard) {
    this.#client = client;
  }
  create(params: CreateLeadParams, options?: RequestOptions): Promise<Lead> {
    return this.#client.request({ method: 'POST', path: '/api/v1/leads/create.php', body: params }, options);
  }
  update(params: UpdateLeadParams, options?: RequestOptions): Promise<Lead> {
    return this.#client.request({ method: 'POST', path: '/api/v1/leads/update.php', body: params }, options);
  }
  retrieve(leadId: number, options?: RequestOptions): Promise<Lead> {
    return this.#client.request({ method: 'GET', path: '/api/v1/leads/get.php', query: { id: leadId } }, options);
  }
  list(params: PageParams = {}, options?: RequestOptions): Promise<LeadPage> {
    return this.#client.request({ method: 'GET', path: '/api/v1/leads/list.php', query: params }, options);
  }
}

/** Support tickets. */
export class Tickets {
  readonly #client: Switchboard;
  constructor(client: Switchboard) {
    this.#client = client;
  }
  create(params: CreateTicketParams, options?: RequestOptions): Promise<Ticket> {
    return this.#client.request({ method: 'POST', path: '/api/v1/tickets/create.php', body: params }, options);
  }
  list(params: ListTicketsParams = {}, options?: RequestOptions): Promise<TicketPage> {
    return this.#client.request({ method: 'GET', path: '/api/v1/tickets/list.php', query: params }, options);
  }
}
