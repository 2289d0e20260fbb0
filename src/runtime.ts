import type { Config } from './config/config.ts';
import { type Clock, systemClock } from './lib/clock.ts';
import type { Logger } from './lib/logger.ts';
import { Metrics } from './lib/metrics.ts';
import { type Scheduler, realScheduler } from './lib/scheduler.ts';
import { TokenBuckets } from './lib/token-bucket.ts';
import { VoicePreviewService } from './services/voice-preview.service.ts';
import { PREVIEW_LIMITS, synthesisePreview } from './voice/voice-preview.ts';
import { errors } from './domain/errors.ts';
import { ProviderError } from './providers/errors.ts';
import { AccountRepository } from './storage/account.repository.ts';
import { AgentRepository } from './storage/agent.repository.ts';
import { CallRepository } from './storage/call.repository.ts';
import { LeaseRepository } from './storage/lease.repository.ts';
import { SharedRateBuckets } from './storage/rate-bucket.repository.ts';
import { LocalNotifications, type Notifications, PgNotifications, notifyThrough } from './storage/pg-notifications.ts';
import { newId } from './lib/ids.ts';
import { type Store, openStore } from './storage/store.ts';
import { AccessTokenSigner } from './services/access-token.ts';
import { AccountService } from './services/account.service.ts';
import { AgentService } from './services/agent.service.ts';
import { PhoneNumberService } from './services/phone-number.service.ts';
import { PhoneCallService } from './services/phone-call.service.ts';
import { PhoneNumberRepository } from './storage/phone-number.repository.ts';
import { StoreCallRetention } from './services/call-retention.ts';
import { DatabaseRecordingStore } from './services/database-recording-store.ts';
import { FileRecordingStore } from './services/file-recording-store.ts';
import { RecordingLinks } from './services/recording-link.ts';
import type { RecordingStore } from './services/recording-store.ts';
import { RecordingRepository } from './storage/recording.repository.ts';
import { CallService } from './services/call.service.ts';
import { CallLifecycle } from './services/call-lifecycle.ts';
import type { EventOutbox } from './services/events.ts';
import { HousekeepingService } from './services/housekeeping.service.ts';
import { LeadService } from './services/lead.service.ts';
import { TicketService } from './services/ticket.service.ts';
import type { WebhookService } from './services/webhook.service.ts';
import { LeadRepository } from './storage/lead.repository.ts';
import { KnowledgeRepository } from './storage/knowledge.repository.ts';
import { KnowledgeService } from './services/knowledge.service.ts';
import { OpenAiEmbeddings } from './providers/openai/embeddings.ts';
import { TicketRepository } from './storage/ticket.repository.ts';
import type { DeliveryPump } from './webhooks/delivery-pump.ts';
import type { WebhookDispatcher } from './webhooks/dispatcher.ts';
import { createWebhookParts } from './webhooks/webhook-runtime.ts';
import { callForCustomLlm, functionCallerFor } from './webhooks/function-caller.ts';
import { type InboundCallAsker, inboundCallAskerFor } from './webhooks/inbound-call.ts';
import { DestinationPolicy } from './webhooks/destination-policy.ts';
import { DocumentFetcher } from './webhooks/document-fetcher.ts';
import { KNOWLEDGE_LIMITS } from './domain/knowledge-base.ts';
import { USER_AGENT } from './webhooks/signer.ts';
import { llmSocketOpener } from './media/llm-websocket.ts';
import { type Providers, buildProviders, speechCatalog } from './providers/registry.ts';
import { logProviderFailures } from './providers/logged.ts';
import { DEFAULT_SESSION_TIMINGS, type SessionTimings } from './media/call-session.ts';
import { engineCapabilityCheck, flowToolsFor } from './media/media-runtime.ts';
import { TranscriptPiiRedactor } from './media/pii-redactor.ts';
import { SessionRegistry } from './media/session-registry.ts';
import { SimulationRunner } from './media/simulation/case-runner.ts';
import { audioCasePlayer } from './media/simulation/audio-call.ts';
import { LoopbackEndpoint } from './media/loopback/loopback.endpoint.ts';
import { TestSpeech } from './media/simulation/test-speech.ts';
import { AgentTestService } from './services/agent-test.service.ts';
import { AgentTestRepository } from './storage/agent-test.repository.ts';
import { releaseIdleMemory } from './lib/idle-memory.ts';

export interface Services {
  accounts: AccountService;
  agents: AgentService;
  calls: CallService;
  /** A call's life while it runs: admission, lease, checkpoint, end, and the sweep of unused tokens. */
  lifecycle: CallLifecycle;
  /** Where recordings live (files on SQLite, chunks on PostgreSQL); `recover` finishes a dead server's. */
  recordings: RecordingStore;
  /** Signs and checks the `recording_url` links that play without an API key. */
  recordingLinks: RecordingLinks;
  webhooks: WebhookService;
  /** The delivery worker; main.ts starts it. */
  webhookDispatcher: WebhookDispatcher;
  /**
   * The worker's claim -> send -> record step: the worker runs a round on every wake; tests and
   * tools that drive time with a manual clock run rounds themselves (`runOnce`).
   */
  webhookPump: DeliveryPump;
  leads: LeadService;
  tickets: TicketService;
  /** Phone numbers (issue 24): the API's, and the phone transports' look-ups by number. */
  phoneNumbers: PhoneNumberService;
  /** Knowledge bases (issue 29): sources, background ingestion, retrieval. */
  knowledge: KnowledgeService;
  /** create-phone-call: outbound calls placed by the transport that reaches the number. */
  phoneCalls: PhoneCallService;
  /** Prunes expired idempotency keys and old webhook logs; main.ts runs it hourly. */
  housekeeping: HousekeepingService;
  /** Agent tests: test cases and runs of simulated calls (issue 28). */
  tests: AgentTestService;
  /** Voice previews: a short text spoken with an agent's voice settings (issue 27). */
  voicePreviews: VoicePreviewService;
}

/** Everything a process runs on: config, clock, store and the services over it. */
export interface Runtime {
  readonly config: Config;
  /** This process's id among the servers of one store: the holder of the leases of its calls. */
  readonly serverId: string;
  readonly clock: Clock;
  /** The process's root logger; components log through children of it. */
  readonly logger: Logger;
  /** The process's Prometheus registry (served on /metrics); components add their counters to it. */
  readonly metrics: Metrics;
  readonly store: Store;
  /** Update-call pushes and key revocations between the servers of the store; main.ts starts listening. */
  readonly notifications: Notifications;
  readonly services: Services;
  /** Speech engines and the calls in progress (transports run calls through `sessions`; `close()` ends them first). */
  /** `inboundCalls`: asks a number's inbound_webhook_url about an inbound phone call (issue 24). */
  readonly media: { readonly providers: Providers; readonly sessions: SessionRegistry; readonly inboundCalls: InboundCallAsker };
  /** Closes the store; idempotent. */
  close(): Promise<void>;
}

export interface RuntimeOptions {
  /** The process's root logger (main.ts creates it from LOG_LEVEL; tests pass a silent one). */
  logger: Logger;
  clock?: Clock;
  /** An already open store (tests share one per suite). */
  store?: Store;
  /** Speech engines to use instead of those of config.media (tests inject scripted fakes). */
  providers?: Providers;
  /** Call-session timings (tests shorten them). */
  sessionTimings?: Partial<SessionTimings>;
  /** The call sessions' clock and timers; default the real ones. */
  scheduler?: Scheduler;
}

/** The composition root: builds the store and services from config, once per process. */
export async function createRuntime(config: Config, options: RuntimeOptions): Promise<Runtime> {
  const clock = options.clock ?? systemClock;
  const logger = options.logger;
  const metrics = new Metrics();
  const store =
    options.store ??
    (await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: config.databasePoolSize }));
  const accountRepo = new AccountRepository(store.db);
  const tokenSecret = await accountRepo.getOrCreateSecret('access_token_key', AccessTokenSigner.generateSecret, clock.now());

  // Between the servers of one PostgreSQL database: LISTEN/NOTIFY; within the process otherwise
  // (the embedded store has one server, and tests over an injected store one process).
  const notifications: Notifications =
    store.dialect === 'postgres' && config.databaseUrl !== null
      ? new PgNotifications({ url: config.databaseUrl, send: notifyThrough(store.db), log: logger.child({ component: 'notifications' }) })
      : new LocalNotifications();
  const accounts = new AccountService({
    store,
    accounts: accountRepo,
    clock,
    defaultRateLimitPerMinute: config.defaultRateLimitPerMinute,
    keyCacheTtlMs: config.apiKeyCacheTtlMs,
    notifications,
  });
  notifications.subscribe('api_key_revocations', { onMessage: () => accounts.forgetCachedKeys(), onResync: () => accounts.forgetCachedKeys() });
  // Where webhooks may go (WEBHOOK_ALLOWED_CIDRS): URLs are judged when set and at every connect.
  const destinations = new DestinationPolicy(config.webhooks.allowedCidrs);
  const providers = logProviderFailures(options.providers ?? buildProviders(config.media.providers), logger.child({ component: 'providers' }));
  const documentFetcher = new DocumentFetcher({
    policy: destinations,
    maxBytes: KNOWLEDGE_LIMITS.urlBytes,
    timeoutMs: KNOWLEDGE_LIMITS.urlTimeoutMs,
    maxRedirects: KNOWLEDGE_LIMITS.urlRedirects,
    userAgent: USER_AGENT,
  });
  // On PostgreSQL, the bases' content stamps are kept between searches while notifications say they are current.
  const knowledgeRepo = new KnowledgeRepository(store, notifications instanceof PgNotifications ? { changes: notifications } : {});
  if (config.knowledge.embeddings) {
    // Hybrid retrieval: pgvector where the PostgreSQL server has it, found (and made ready) before any chunk is written.
    const vectors = await knowledgeRepo.vectorSearch();
    logger.info({ component: 'knowledge', vector_search: vectors.search, ...(vectors.search === 'pgvector' ? { pgvector: vectors.version } : { reason: vectors.reason }) }, 'knowledge vector search');
  }
  const knowledge = new KnowledgeService({
    store,
    knowledge: knowledgeRepo,
    clock,
    log: logger.child({ component: 'knowledge' }),
    embedder: config.knowledge.embeddings ? new OpenAiEmbeddings(config.knowledge.embeddings) : null,
    fetcher: documentFetcher,
    destinations,
  });
  const agents = new AgentService({
    store,
    agents: new AgentRepository(store),
    clock,
    destinations,
    speech: speechCatalog(providers),
    cacheHeads: store.dialect === 'sqlite',
    knowledgeBases: (accountId, ids) => knowledge.ownedBases(accountId, ids),
  });
  const webhookParts = createWebhookParts(config, store, clock, logger.child({ component: 'webhooks' }), destinations);
  const outbox: EventOutbox = webhookParts.outbox;
  const leads = new LeadService({ store, leads: new LeadRepository(store.db, store.dialect), outbox, clock });
  const tickets = new TicketService({ store, tickets: new TicketRepository(store.db), outbox, clock });
  const phoneNumbers = new PhoneNumberService({ store, numbers: new PhoneNumberRepository(store.db), agents, box: webhookParts.box, clock, destinations });
  // Recordings: files under DATA_DIR on SQLite (one server); chunks in the database on PostgreSQL,
  // so any server serves any call's recording and a lost server loses at most its last chunk.
  const recordings: RecordingStore =
    store.dialect === 'postgres' ? new DatabaseRecordingStore(new RecordingRepository(store)) : new FileRecordingStore(config.dataDir);
  const recordingLinks = new RecordingLinks({
    secret: await accountRepo.getOrCreateSecret('recording_url_key', RecordingLinks.generateSecret, clock.now()),
    ttlMs: config.recordingUrlTtlMs,
    clock,
    publicBaseUrl: config.publicBaseUrl,
  });
  const redactor = new TranscriptPiiRedactor({ recordings });
  const callRepo = new CallRepository(store);
  const signer = new AccessTokenSigner(tokenSecret);
  const retention = new StoreCallRetention({ recordings, redactor });
  const serverId = newId('server');
  const housekeeping = new HousekeepingService({
    calls: callRepo,
    webhooks: webhookParts.repository,
    clock,
    deliveryLogRetentionDays: config.webhooks.logRetentionDays,
  });
  const calls = new CallService({
    store,
    calls: callRepo,
    agents,
    signer,
    outbox,
    retention,
    // One server per SQLite store: its buckets in memory; PostgreSQL servers share theirs in the database.
    rateLimiter: store.dialect === 'postgres' ? new SharedRateBuckets(store, clock) : new TokenBuckets(clock),
    clock,
    accessTokenTtlMs: config.accessTokenTtlMs,
    publicBaseUrl: config.publicBaseUrl,
    recordingLinks,
    checkEngine: engineCapabilityCheck(providers),
    recogniserCapacity: () => providers.stt.capacity?.(),
    notifications,
  });
  const lifecycle = new CallLifecycle({
    store,
    calls: callRepo,
    agents,
    signer,
    outbox,
    retention,
    clock,
    publicBaseUrl: config.publicBaseUrl,
    recordingLinks,
    checkEngine: engineCapabilityCheck(providers),
    recogniserCapacity: () => providers.stt.capacity?.(),
    leases: new LeaseRepository(store),
    serverId,
    leaseTtlMs: config.callLeaseTtlMs,
  });
  const sessionTimings: SessionTimings = { ...DEFAULT_SESSION_TIMINGS, recognitionTimeoutMs: config.media.recognitionTimeoutMs, ...options.sessionTimings };
  const functionCaller = functionCallerFor({
    client: webhookParts.functionClient,
    secrets: webhookParts.webhooks,
    calls: lifecycle,
    clock,
    log: logger.child({ component: 'functions' }),
    counter: metrics.counter('switchboard_function_calls_total', 'Custom-function requests by outcome.', ['outcome']),
  });
  const openLlmSocket = llmSocketOpener({ lookup: destinations.lookup, literalRefusal: (host) => destinations.literalRefusal(host), userAgent: USER_AGENT });
  const sessions = new SessionRegistry({
    calls: lifecycle,
    providers,
    tools: flowToolsFor(leads, tickets),
    functions: functionCaller,
    customLlm: {
      open: openLlmSocket,
      callDetails: callForCustomLlm,
      failures: metrics.counter('switchboard_custom_llm_failures_total', "Calls a custom LLM's server ended, by disconnection reason (error_llm_websocket_*).", ['reason']),
    },
    recordings,
    knowledge,
    rememberNames: (callId, names) => redactor.rememberNames(callId, names),
    log: logger.child({ component: 'media' }),
    crashes: metrics.counter('switchboard_call_crashes_total', 'Calls ended by an error nothing expected (error_unknown), by the part that failed; each one is a bug.', ['where']),
    timings: sessionTimings,
    scheduler: options.scheduler ?? realScheduler,
    recoveredCalls: metrics.counter('switchboard_calls_recovered_total', 'Calls of lost servers (lapsed leases) this server ended with error_server_lost.'),
    releaseIdleMemory,
  });
  // Agent tests play simulated calls on the embedded engines: mocked functions (the real ones
  // only where a case allows them), leads and tickets kept in the run, no call rows, no webhooks.
  const testsStopped = new AbortController();
  // Audio-mode cases run on the embedded engines unless they name the server's own providers.
  const configuredSpeech = options.providers ? { stt: providers.stt.id, tts: providers.tts.id } : { stt: config.media.providers.stt.id, tts: config.media.providers.tts.id };
  const testSpeech = new TestSpeech(providers, configuredSpeech, config.media.embedded);
  // Agent tests reach the account's real functions (cases that allow unmocked ones) and custom LLMs as calls do.
  const testFunctions = (accountId: string, details: () => unknown) => functionCaller({ accountId, callId: 'simulated', details }, testsStopped.signal);
  const testCustomLlm = { open: openLlmSocket, callDetails: callForCustomLlm };
  const tests = new AgentTestService({
    store,
    serverId,
    leaseTtlMs: config.callLeaseTtlMs,
    tests: new AgentTestRepository(store.db),
    agents,
    outbox,
    clock,
    checkProviders: (names) => testSpeech.problem(names),
    runner: new SimulationRunner({
      llm: providers.llm,
      functions: testFunctions,
      customLlm: testCustomLlm,
      audio: audioCasePlayer({ llm: providers.llm, speech: testSpeech, customLlm: testCustomLlm, functions: testFunctions, timings: sessionTimings, endpoint: () => new LoopbackEndpoint({ realTime: false }), log: logger.child({ component: 'agent-tests' }) }),
    }),
  });
  // Other servers' webhook events wake this server's delivery worker (which also polls).
  const wakeWorker = () => webhookParts.dispatcher.wake();
  notifications.subscribe('switchboard_webhooks', { onMessage: wakeWorker, onResync: wakeWorker });
  const voicePreviews = new VoicePreviewService({
    speech: speechCatalog(providers),
    limiter: new TokenBuckets(clock),
    synthesise: async (text, style) => {
      try {
        return await synthesisePreview(providers.tts, text, style, PREVIEW_LIMITS);
      } catch (error) {
        throw errors.speechUnavailable(`The speech engine (${providers.tts.id}) could not speak the preview: ${error instanceof ProviderError ? error.message : 'it failed'}.`, error);
      }
    },
  });
  notifications.subscribe('call_updates', { onMessage: (callId) => sessions.onCallUpdated(callId), onResync: () => sessions.resyncCalls() });

  let closing: Promise<void> | null = null;
  return {
    config,
    serverId,
    clock,
    logger,
    metrics,
    store,
    notifications,
    services: { accounts, agents, calls, lifecycle, recordings, recordingLinks, webhooks: webhookParts.webhooks, webhookDispatcher: webhookParts.dispatcher, webhookPump: webhookParts.pump, leads, tickets, phoneNumbers, phoneCalls: new PhoneCallService({ lifecycle, phoneNumbers, accounts }), knowledge, housekeeping, tests, voicePreviews },
    media: { providers, sessions, inboundCalls: inboundCallAskerFor({ client: webhookParts.functionClient, secrets: webhookParts.webhooks, clock, log: logger.child({ component: 'inbound_webhook' }) }) },
    close() {
      // Calls in progress end first (server_shutdown), while the store can still record them.
      testsStopped.abort(new Error('the server is shutting down'));
      closing ??= tests
        .close()
        .then(() => sessions.close())
        .then(() => knowledge.close())
        .then(() => notifications.close())
        .then(() => providers.close())
        .then(() => testSpeech.close())
        .then(() => webhookParts.close())
        .then(() => store.close());
      return closing;
    },
  };
}
