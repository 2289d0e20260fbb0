import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** One value of a gauge read when /metrics is scraped. */
export interface GaugeSample {
  labels: Record<string, string>;
  value: number;
}

/**
 * The process's Prometheus registry, created once by the runtime and handed to the components
 * that count things (the HTTP layer, the media transport, the demo's limits); `/metrics` exposes
 * it. A metric is created on first use and the same object is returned after, so two apps over
 * one runtime (tests) share it. One registry per runtime, so tests can build many runtimes.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly #metrics = new Map<string, unknown>();
  #defaults = false;

  /** A counter; names end in `_total`. */
  counter<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return this.#once(name, (): Counter<L> => new Counter({ name, help, labelNames: [...labelNames], registers: [this.registry] }));
  }

  /** A histogram with the given bucket bounds. */
  histogram<L extends string = never>(name: string, help: string, labelNames: readonly L[], buckets: number[]): Histogram<L> {
    return this.#once(name, (): Histogram<L> => new Histogram({ name, help, labelNames: [...labelNames], buckets, registers: [this.registry] }));
  }

  /** A gauge whose values are read when /metrics is scraped. */
  gauge(name: string, help: string, labelNames: readonly string[], read: () => Promise<GaugeSample[]> | GaugeSample[]): void {
    this.#once(
      name,
      () =>
        new Gauge({
          name,
          help,
          labelNames: [...labelNames],
          registers: [this.registry],
          async collect() {
            this.reset();
            for (const { labels, value } of await read()) this.set(labels, value);
          },
        }),
    );
  }

  /** Adds the process's own metrics (CPU, memory, event-loop lag); once. */
  collectProcessMetrics(): void {
    if (this.#defaults) return;
    this.#defaults = true;
    collectDefaultMetrics({ register: this.registry });
  }

  /** The metric registered under `name`, made by `make` the first time (a name always names one kind). */
  #once<M>(name: string, make: () => M): M {
    if (!this.#metrics.has(name)) this.#metrics.set(name, make());
    return this.#metrics.get(name) as M;
  }
}
