import type { FastifyPluginAsync } from 'fastify';
import swaggerUi from '@fastify/swagger-ui';
import { DOCS_CSP, setPageHeaders } from '../page-headers.ts';

/**
 * The API reference at /docs (Swagger UI over the OpenAPI document that @fastify/swagger builds,
 * which must be registered first), with the pages' headers on the page, its assets and its JSON.
 * Registered in its own scope so the headers apply to /docs only.
 */
export function docsRoutes(): FastifyPluginAsync {
  return async (app) => {
    app.addHook('onRequest', (_request, reply, done) => {
      setPageHeaders(reply, DOCS_CSP);
      done();
    });
    // No validator badge: it would load an image from validator.swagger.io.
    await app.register(swaggerUi, { routePrefix: '/docs', validatorUrl: false });
  };
}
