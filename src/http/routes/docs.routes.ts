import fs from 'node:fs/promises';
import path from 'node:path';
import type { FastifyPluginAsync } from 'fastify';
import swaggerUi from '@fastify/swagger-ui';
import { DOCS_CSP, setPageHeaders } from '../page-headers.ts';

/** The guides in docs/, served as text beside the reference, in the order the reference lists them. */
export const GUIDES = {
  api: 'The API: routes, choices where the contract is silent, limits, shapes',
  configuration: 'Configuration: every environment variable',
  'browser-sdk': 'Browser SDK: put a call on your page',
  webhooks: 'Webhooks: events, signatures, retries',
  'media-protocol': 'The web-call media protocol (WebSocket)',
  'voice-pipeline': 'The voice pipeline and its engines',
  providers: 'Hosted speech providers: Deepgram, AssemblyAI, ElevenLabs, Cartesia',
  telephony: 'Telephony: phone numbers, SIP trunks and Twilio',
  'knowledge-bases': 'Knowledge bases: documents agents answer from',
  architecture: 'Architecture',
  'testing-agents': 'Testing agents: simulated calls, assertions, runs in CI',
  'custom-llm': 'Custom LLM: your own server over the LLM WebSocket',
  'custom-functions': 'Custom functions: your backend, called mid-call',
  retell: 'Porting from Retell',
  deploy: 'Deploying: one server, several on PostgreSQL, networks',
  dashboard: 'The dashboard',
  cli: 'The command line',
} as const;

/** Where the guides are served: `${GUIDES_PATH}/<name>.md`. */
export const GUIDES_PATH = '/docs/guides';
const DOCS_DIR = path.resolve(import.meta.dirname, '../../../docs');

/** Markdown links to the guides, for the API document's description. */
export function guideLinks(): string {
  return Object.entries(GUIDES).map(([name, title]) => `- [${title}](${GUIDES_PATH}/${name}.md)`).join('\n');
}

/**
 * The API reference at /docs (Swagger UI over the OpenAPI document that @fastify/swagger builds,
 * which must be registered first) and the guides it links to (/docs/guides/<name>.md, as plain
 * text), with the pages' headers on the page, its assets and its JSON. Registered in its own
 * scope so the headers apply to /docs only.
 */
export function docsRoutes(): FastifyPluginAsync {
  return async (app) => {
    app.addHook('onRequest', (_request, reply, done) => {
      setPageHeaders(reply, DOCS_CSP);
      done();
    });
    // No validator badge: it would load an image from validator.swagger.io.
    await app.register(swaggerUi, { routePrefix: '/docs', validatorUrl: false });
    app.get<{ Params: { name: string } }>(`${GUIDES_PATH}/:name`, { schema: { hide: true } }, async (request, reply) => {
      const name = /^([a-z-]+)\.md$/.exec(request.params.name)?.[1];
      if (name === undefined || !Object.hasOwn(GUIDES, name)) {
        // As the other static files (web.routes.ts): a 404 with the API's error body.
        return reply.code(404).send({ status: 'error', code: 'route_not_found', message: 'No such guide.' });
      }
      const text = await fs.readFile(path.join(DOCS_DIR, `${name}.md`), 'utf8');
      return reply.header('content-type', 'text/plain; charset=utf-8').header('cache-control', 'no-cache').send(text);
    });
  };
}
