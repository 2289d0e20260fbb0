import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { HttpMount, TransportReply, TransportRequest } from '../lib/http-mount.ts';

/** Largest body a carrier's webhook may send, bytes (Twilio's voice webhook is about 1 KB). */
export const TRANSPORT_BODY_LIMIT_BYTES = 65_536;

type Handler = (request: TransportRequest) => Promise<TransportReply>;

/**
 * The routes transports serve (src/media/transport.ts, `HttpMount`): collected while the
 * transports start, then mounted as one plugin with its own body parsing (forms and JSON kept as
 * text: the carrier's signature is over the body as sent), outside the API's key.
 */
export class TransportRoutes implements HttpMount {
  readonly #routes: Array<{ path: string; handler: Handler }> = [];

  post(path: string, handler: Handler): void {
    this.#routes.push({ path, handler });
  }

  plugin(): FastifyPluginAsync {
    const routes = [...this.#routes];
    return async (scope: FastifyInstance) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser(['application/x-www-form-urlencoded', 'application/json'], { parseAs: 'string', bodyLimit: TRANSPORT_BODY_LIMIT_BYTES }, (_request, body, done) => done(null, body));
      for (const { path, handler } of routes) {
        scope.post(path, { schema: { hide: true } }, async (request, reply) => {
          const answer = await handler({ url: request.url, headers: request.headers, body: typeof request.body === 'string' ? request.body : '' });
          return reply.code(answer.status).type(answer.contentType).header('cache-control', 'no-store').send(answer.body);
        });
      }
    };
  }
}
