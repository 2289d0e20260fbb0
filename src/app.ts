import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { newId } from './lib/ids.ts';
import { requireApiKey } from './http/auth.ts';
import { connectionOptions, installConnectionHandling } from './http/connections.ts';
import { DemoAdmission } from './http/demo-admission.ts';
import { installJsonBody } from './http/json-body.ts';
import { installRetellAliases } from './http/retell-aliases.ts';
import { docsRoutes, guideLinks } from './http/routes/docs.routes.ts';
import { openApiOptions } from './http/openapi.ts';
import { pagedRoutes } from './http/routes/paged.routes.ts';
import { installRequestLog } from './http/request-log.ts';
import { installErrorHandling } from './http/error-handler.ts';
import { installInputGuard } from './http/input-guard.ts';
import { installHttpMetrics } from './http/metrics.ts';
import { agentRoutes } from './http/routes/agent.routes.ts';
import { agentTestRoutes } from './http/routes/agent-test.routes.ts';
import { callRoutes } from './http/routes/call.routes.ts';
import { healthRoutes } from './http/routes/health.routes.ts';
import { leadRoutes } from './http/routes/lead.routes.ts';
import { phoneNumberRoutes } from './http/routes/phone-number.routes.ts';
import { knowledgeRoutes } from './http/routes/knowledge.routes.ts';
import { phoneCallRoutes } from './http/routes/phone-call.routes.ts';
import { webhookRoutes } from './http/routes/webhook.routes.ts';
import { webRoutes } from './http/routes/web.routes.ts';
import { recordingRoutes, signedRecordingRoutes } from './http/routes/recording.routes.ts';
import { voiceRoutes } from './http/routes/voice.routes.ts';
import { TransportRoutes } from './http/transport-routes.ts';
import { TRANSPORTS } from './media/transports.ts';
import type { TransportHandle } from './media/transport.ts';
import type { Runtime } from './runtime.ts';

export interface AppOptions {
  /** Collect process metrics (CPU, memory) on /metrics. */
  processMetrics?: boolean;
}

/** Request bodies above this are refused with 413. */
export const BODY_LIMIT_BYTES = 1_048_576;

/** Builds the HTTP app without listening, so tests can `inject()` requests. */
export async function buildApp(runtime: Runtime, options: AppOptions = {}): Promise<FastifyInstance> {
  // The process's one root logger (src/lib/logger.ts): request logs are its children. Typed as
  // Fastify's logger interface, which pino implements, so routes keep Fastify's default types.
  const logger: FastifyBaseLogger = runtime.logger.child({ component: 'http' });
  const app = Fastify({
    loggerInstance: logger,
    // One line per answered request instead, at a level by what it did (src/http/request-log.ts).
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT_BYTES,
    // Time limits on clients, trustProxy, and our error body below the routes (src/http/connections.ts).
    ...connectionOptions(runtime.config.http, runtime.metrics),
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : newId('request');
    },
    requestIdHeader: false,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: true, allErrors: false } },
    routerOptions: { maxParamLength: 512 },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  installRequestLog(app);
  installErrorHandling(app);
  installConnectionHandling(app);
  // Before the routes: both add to routes as they are registered.
  installJsonBody(app);
  installRetellAliases(app);
  installInputGuard(app);

  // The OpenAPI document: operationIds, tags, named components, servers (src/http/openapi.ts).
  await app.register(swagger, openApiOptions(runtime.config.publicBaseUrl, guideLinks()));
  await app.register(docsRoutes());
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  const metrics = runtime.metrics;
  if (options.processMetrics) metrics.collectProcessMetrics();
  metrics.gauge('switchboard_calls', 'Calls in the store by status.', ['status'], async () =>
    (await runtime.services.calls.countByStatus()).map((row) => ({ labels: { status: row.call_status }, value: row.count })),
  );
  metrics.gauge('switchboard_webhook_deliveries', 'Webhook deliveries in the store by status (pending is the queue).', ['status'], async () =>
    (await runtime.services.webhooks.countDeliveries()).map((row) => ({ labels: { status: row.status }, value: row.count })),
  );
  installHttpMetrics(app, metrics);
  healthRoutes(app, runtime.store);
  // The SDK bundle, /demo and /dashboard: public pages; the demo's server side uses DEMO_API_KEY
  // with its own limits (src/http/demo-admission.ts), apart from the operator's API budget.
  const { config, services } = runtime;
  const demo =
    config.demoApiKey === null
      ? null
      : {
          apiKey: config.demoApiKey,
          accounts: services.accounts,
          calls: services.calls,
          admission: new DemoAdmission({
            clock: runtime.clock,
            limits: { ratePerMinute: config.demoRateLimitPerMinute, maxConcurrentCalls: config.demoMaxConcurrentCalls },
            readCall: (callId) => services.calls.readCall(callId),
            metrics,
          }),
        };
  await app.register(webRoutes({ demo }));
  // recording_url: signed, expiring links that play without an API key.
  await app.register(signedRecordingRoutes({ calls: services.calls, recordings: services.recordings, links: services.recordingLinks }));

  await app.register(async (authed) => {
    requireApiKey(authed, runtime.services.accounts);
    await authed.register(agentRoutes(runtime.services.agents));
    await authed.register(voiceRoutes(runtime.services.agents, runtime.services.voicePreviews));
    await authed.register(callRoutes(runtime.services.calls));
    await authed.register(pagedRoutes(runtime.services.calls, runtime.services.agents));
    await authed.register(recordingRoutes({ calls: runtime.services.calls, recordings: runtime.services.recordings }));
    await authed.register(webhookRoutes(runtime.services.webhooks));
    await authed.register(leadRoutes(runtime.services.leads, runtime.services.tickets));
    await authed.register(phoneNumberRoutes(runtime.services.phoneNumbers));
    await authed.register(agentTestRoutes(runtime.services.tests));
    await authed.register(knowledgeRoutes(runtime.services.knowledge));
    await authed.register(phoneCallRoutes(runtime.services.phoneCalls));
  });

  // The transports (src/media/transports.ts): the web call's WebSocket at GET /v2/web-call
  // (docs/media-protocol.md), the in-process loopback. Closing the app first ends the calls in
  // progress through the runtime's registry (server_shutdown, results stored), then closes the
  // transports: a transport never shuts the registry down.
  const transports = new Map<string, TransportHandle>();
  // A carrier's webhooks (Twilio's /twilio/voice): routes the transports declare as they start.
  const transportRoutes = new TransportRoutes();
  for (const transport of TRANSPORTS) {
    transports.set(transport.id, transport.start({
      registry: runtime.media.sessions,
      metrics,
      log: runtime.media.sessions.log,
      server: app.server,
      app,
      http: transportRoutes,
      rtc: config.rtc,
      publicBaseUrl: config.publicBaseUrl,
      phone: { numbers: runtime.services.phoneNumbers, sip: runtime.config.sip, calls: runtime.services.phoneCalls, twilioApiBaseUrl: config.twilio.apiBaseUrl, askInbound: runtime.media.inboundCalls },
    }));
  }
  await app.register(transportRoutes.plugin());
  app.decorate('transports', transports);
  app.addHook('preClose', async () => {
    await runtime.media.sessions.close();
    await Promise.all([...transports.values()].map((handle) => handle.close()));
  });

  return app;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The started transports by id (src/media/transports.ts): `loopback` drives calls from code. */
    transports: ReadonlyMap<string, TransportHandle>;
  }
}
