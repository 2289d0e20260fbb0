import fs from 'node:fs/promises';
import type { OutgoingHttpHeaders } from 'node:http';
import path from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AccountService } from '../../services/account.service.ts';
import type { CallService } from '../../services/call.service.ts';
import type { DemoAdmission } from '../demo-admission.ts';
import { PAGE_CSP, setPageHeaders } from '../page-headers.ts';
import { PathId } from '../schemas/common.schemas.ts';

/** Where scripts/build-web.ts writes the bundles. */
export const DEFAULT_WEB_DIST_DIR = path.resolve(import.meta.dirname, '../../../dist/web');

/** Marks the calls the demo page created: the demo's read routes show no other call. */
export const DEMO_CALL_SOURCE = 'switchboard-demo';

export interface WebRoutesOptions {
  /** The demo's server side; null (no DEMO_API_KEY) disables the demo API. */
  demo: DemoOptions | null;
  /** The built bundles (default dist/web). */
  distDir?: string;
}

export interface DemoOptions {
  /** The operator key the demo acts with (DEMO_API_KEY). */
  apiKey: string;
  /** Authenticates the key (a revoked key turns the demo off). */
  accounts: AccountService;
  /** Creates the demo's calls, outside the account's create-web-call bucket. */
  calls: CallService;
  /** The demo's own limits: per client address and calls at once. */
  admission: DemoAdmission;
}

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.ts': 'application/typescript; charset=utf-8', // web-sdk.d.ts
};

const NOT_BUILT =
  'The browser bundles are not built. Run `node scripts/build-web.ts` (npm start and npm test run it first).';

/**
 * The browser side of the service, outside the API-key hook: the SDK bundle (/sdk/web-sdk.js) and
 * its types (/sdk/web-sdk.d.ts),
 * the demo page (/demo) with its small server API, and the dashboard (/dashboard).
 */
export function webRoutes(options: WebRoutesOptions): FastifyPluginAsyncTypebox {
  const distDir = options.distDir ?? DEFAULT_WEB_DIST_DIR;
  return async (app) => {
    // --- static bundles -------------------------------------------------------------------
    const sendBundle = async (reply: FastifyReply, file: string) => {
      if (!/^[\w-]+(\.[\w-]+)*\.(js|css|map|json|d\.ts)$/.test(file)) return notFound(reply);
      let body: Buffer;
      try {
        body = await fs.readFile(path.join(distDir, file));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        if (!(await exists(path.join(distDir, 'manifest.json')))) {
          return reply.code(503).send({ status: 'error', code: 'web_not_built', message: NOT_BUILT });
        }
        return notFound(reply);
      }
      return reply
        .header('content-type', CONTENT_TYPES[path.extname(file)] ?? 'application/octet-stream')
        .header('cache-control', 'no-cache')
        .header('x-content-type-options', 'nosniff')
        .header('access-control-allow-origin', '*') // the SDK may be loaded by a customer's page
        .send(body);
    };
    const FileParam = Type.Object({ file: Type.String({ maxLength: 128 }) });
    app.get('/sdk/:file', { schema: { hide: true, params: FileParam } }, async (request, reply) => sendBundle(reply, request.params.file));
    app.get('/web/:file', { schema: { hide: true, params: FileParam } }, async (request, reply) => sendBundle(reply, request.params.file));

    // --- pages ---------------------------------------------------------------------------
    const sendPage = async (reply: FastifyReply, html: string) => {
      if (!(await exists(path.join(distDir, 'manifest.json')))) {
        return reply.code(503).header('content-type', 'text/html; charset=utf-8').send(page('Not built', `<main class="narrow"><h1>Not built</h1><p>${escapeHtml(NOT_BUILT)}</p></main>`));
      }
      return setPageHeaders(reply, PAGE_CSP).header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-store').send(html);
    };

    app.get('/demo', { schema: { hide: true } }, async (_request, reply) =>
      sendPage(
        reply,
        options.demo === null
          ? page(
              'Switchboard demo',
              `<main class="narrow" id="demo-not-configured"><h1>The demo is not configured</h1>
<p>Set <code>DEMO_API_KEY</code> to an API key of the account whose agents the demo may call, then restart the server:</p>
<pre>npm run -s cli -- keys create      # prints a new key: sb_...
DEMO_API_KEY=sb_... npm start</pre>
<p>The key stays on the server: this page asks the server to create each call and receives only the call's single-use access token.</p></main>`,
            )
          : page('Switchboard demo', '<div id="app"></div>', '/web/demo.js'),
      ));
    app.get('/dashboard', { schema: { hide: true } }, async (_request, reply) =>
      sendPage(reply, page('Switchboard dashboard', '<div id="app"></div>', '/web/dashboard.js')));

    // --- the demo's server API (acts with the operator key; hands out call tokens only) ----
    await app.register(demoApiRoutes(options.demo, app));
  };
}

/** A request the demo makes to the API as the operator. */
type OperatorRequest = (method: 'GET' | 'POST', url: string, body?: unknown) => Promise<{ status: number; json: any; raw: Buffer; headers: OutgoingHttpHeaders }>;

function demoApiRoutes(demo: DemoOptions | null, root: FastifyInstance): FastifyPluginAsyncTypebox {
  return async (app) => {
    // The demo page's own routes are not API: left out of the OpenAPI document.
    app.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, hide: true };
    });
    app.addHook('onRequest', (_request, reply, done) => {
      reply.header('cache-control', 'no-store');
      done();
    });
    if (demo === null) {
      app.all('/demo/api/*', { schema: { hide: true } }, async (_request, reply) =>
        reply.code(503).send({ status: 'error', code: 'demo_not_configured', message: 'Set DEMO_API_KEY on the server to enable the demo.' }));
      return;
    }

    // Reads go through the API's own routes, validation and auth, injected in-process with the
    // operator key. Creation goes to the call service directly (the same rules), so that it is
    // admitted by the demo's limits and never takes from the operator's create-web-call budget.
    const operator: OperatorRequest = async (method, url, body) => {
      const response = await root.inject({
        method,
        url,
        headers: { authorization: `Bearer ${demo.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        payload: body === undefined ? undefined : JSON.stringify(body),
      });
      let json: unknown;
      try {
        json = JSON.parse(response.body);
      } catch {
        json = undefined;
      }
      return { status: response.statusCode, json, raw: response.rawPayload, headers: response.headers };
    };

    /** Forwards an API error as is (its code and message are meant for clients). */
    const forward = (reply: FastifyReply, response: Awaited<ReturnType<OperatorRequest>>) =>
      reply.code(response.status).send(response.json ?? { status: 'error', code: 'upstream_error', message: 'The API failed.' });

    app.get('/demo/api/agents', async (_request, reply) => {
      const response = await operator('GET', '/list-agents');
      if (response.status !== 200) return forward(reply, response);
      const agents = (response.json as { agent_id: string; agent_name: string | null; version: number }[]).map((a) => ({
        agent_id: a.agent_id,
        agent_name: a.agent_name,
        version: a.version,
      }));
      return { agents };
    });

    app.post('/demo/api/calls', {
      schema: { body: Type.Object({ agent_id: PathId }, { additionalProperties: false }) },
    }, async (request, reply) => {
      const principal = await demo.accounts.authenticate(`Bearer ${demo.apiKey}`);
      const ticket = await demo.admission.admit(request.ip);
      let call;
      try {
        ({ call } = await demo.calls.createWebCall(principal, { agent_id: request.body.agent_id, metadata: { source: DEMO_CALL_SOURCE } }, undefined, { accountRateLimit: false }));
      } catch (error) {
        ticket.release();
        throw error;
      }
      ticket.created(call.call_id);
      // Only what the browser needs to join: never the key, never the rest of the call.
      return reply.code(201).send({ call_id: call.call_id, access_token: call.access_token });
    });

    const CallParam = Type.Object({ call_id: PathId });

    /** The call, if the demo created it; otherwise null (the demo shows no other call). */
    const demoCall = async (callId: string) => {
      const response = await operator('GET', `/v2/get-call/${encodeURIComponent(callId)}`);
      if (response.status !== 200 || response.json?.metadata?.source !== DEMO_CALL_SOURCE) return null;
      return response.json as Record<string, unknown>;
    };

    app.get('/demo/api/calls/:call_id', { schema: { params: CallParam } }, async (request, reply) => {
      const call = await demoCall(request.params.call_id);
      if (!call) return reply.code(404).send({ status: 'error', code: 'call_not_found', message: 'No such demo call.' });
      return {
        call_id: call.call_id,
        agent_name: call.agent_name,
        call_status: call.call_status,
        disconnection_reason: call.disconnection_reason,
        start_timestamp: call.start_timestamp,
        end_timestamp: call.end_timestamp,
        duration_ms: call.duration_ms,
        transcript_object: call.transcript_object,
        latency: call.latency,
        call_analysis: call.call_analysis,
        has_recording: call.recording_url !== null && call.recording_url !== undefined,
        recording_url: call.recording_url ? `/demo/api/calls/${encodeURIComponent(String(call.call_id))}/recording` : null,
      };
    });

    app.get('/demo/api/calls/:call_id/recording', { schema: { params: CallParam } }, async (request, reply) => {
      const call = await demoCall(request.params.call_id);
      if (!call) return reply.code(404).send({ status: 'error', code: 'call_not_found', message: 'No such demo call.' });
      const response = await operator('GET', `/v2/get-call-recording/${encodeURIComponent(request.params.call_id)}`);
      if (response.status !== 200) return forward(reply, response);
      return reply.header('content-type', String(response.headers['content-type'] ?? 'audio/wav')).send(response.raw);
    });
  };
}

function page(title: string, body: string, script?: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/web/app.css">
${script ? `<script type="module" src="${script}"></script>` : ''}
</head>
<body>
${body}
</body>
</html>
`;
}

function notFound(reply: FastifyReply) {
  return reply.code(404).send({ status: 'error', code: 'route_not_found', message: 'No such file.' });
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
