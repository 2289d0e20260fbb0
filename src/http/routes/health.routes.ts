import type { FastifyInstance } from 'fastify';
import type { Store } from '../../storage/store.ts';

export function healthRoutes(app: FastifyInstance, store: Store): void {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    try {
      await store.ping();
      return { status: 'ok', store: store.dialect };
    } catch (error) {
      request.log.warn({ err: error }, 'store not reachable');
      return reply.code(503).send({ status: 'error', code: 'storage_unavailable', message: 'The store is not reachable.' });
    }
  });
}
