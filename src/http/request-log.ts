/**
 * One log line per request, when it is answered (Fastify's own two lines per request are off).
 * Reads that succeed are what a dashboard polls many times a minute: they go at debug. Writes and
 * failures go at info (5xx at error), so the info log says what changed and what went wrong.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** POST routes that only read (the list and search bodies); logged like a GET. */
const READ_ONLY_POSTS = new Set(['/v2/list-calls', '/v3/list-calls', '/v2/list-agents']);

/** Whether a request only reads (GET, HEAD, or a list route taking its filter as a body). */
export function isRead(request: Pick<FastifyRequest, 'method' | 'routeOptions'>): boolean {
  return request.method === 'GET' || request.method === 'HEAD' || (request.method === 'POST' && READ_ONLY_POSTS.has(request.routeOptions.url ?? ''));
}

export function installRequestLog(app: FastifyInstance): void {
  app.addHook('onResponse', (request, reply, done) => {
    const status = reply.statusCode;
    const level = status >= 500 ? 'error' : status < 400 && isRead(request) ? 'debug' : 'info';
    request.log[level]({ req: request, res: { statusCode: status }, responseTime: Math.round(reply.elapsedTime) }, 'request completed');
    done();
  });
}
