// Prometheus metrics: request counts and latency by route and status. One registry per process;
// with several API processes the primary aggregates its workers' registries (see main.ts).

import type { FastifyInstance } from "fastify";
import { collectDefaultMetrics, Histogram, Registry } from "prom-client";

export class HttpMetrics {
  readonly registry: Registry;
  readonly #duration: Histogram<"method" | "route" | "status">;

  constructor(options: { defaultMetrics: boolean }) {
    this.registry = new Registry();
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: "counterpart_" });
    this.#duration = new Histogram({
      name: "counterpart_http_request_duration_seconds",
      help: "Partner API requests by method, route pattern and status; _count is the request count",
      labelNames: ["method", "route", "status"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [this.registry],
    });
  }

  /** Observes every response of `app`; unmatched paths share one label so cardinality stays bounded. */
  instrument(app: FastifyInstance): void {
    app.addHook("onResponse", async (request, reply) => {
      const route = request.routeOptions.url ?? "(unmatched)";
      this.#duration.observe(
        { method: request.method, route, status: String(reply.statusCode) },
        reply.elapsedTime / 1000,
      );
    });
  }
}
