import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../lib/metrics.ts';

/**
 * Counts every request by route and status with its latency, in the runtime's registry, and
 * serves the registry on GET /metrics (Prometheus text format).
 */
export function installHttpMetrics(app: FastifyInstance, metrics: Metrics): void {
  const requests = metrics.counter('http_requests_total', 'HTTP requests by route and status.', ['method', 'route', 'status']);
  const duration = metrics.histogram('http_request_duration_seconds', 'HTTP request latency by route and status.', ['method', 'route', 'status'], [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
  ]);
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
    done();
  });
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}
