import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics of one app instance (a registry each, so tests can build many apps). */
export class HttpMetrics {
  readonly registry = new Registry();
  readonly #requests: Counter<'method' | 'route' | 'status'>;
  readonly #duration: Histogram<'method' | 'route' | 'status'>;

  constructor(options: { collectDefaults?: boolean } = {}) {
    if (options.collectDefaults) collectDefaultMetrics({ register: this.registry });
    this.#requests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests by route and status.',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
    });
    this.#duration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request latency by route and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [this.registry],
    });
  }

  /** A gauge whose value is read when /metrics is scraped. */
  addGauge(name: string, help: string, labelNames: string[], read: () => Promise<Array<{ labels: Record<string, string>; value: number }>>): void {
    new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const { labels, value } of await read()) this.set(labels, value);
      },
    });
  }

  install(app: FastifyInstance): void {
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched';
      const labels = { method: request.method, route, status: String(reply.statusCode) };
      this.#requests.inc(labels);
      this.#duration.observe(labels, reply.elapsedTime / 1000);
      done();
    });
    app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
      reply.header('content-type', this.registry.contentType);
      return this.registry.metrics();
    });
  }
}
