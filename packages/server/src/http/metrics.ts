// Prometheus metrics: request counts and latency by route and status. One registry per process;
// with several API processes the primary aggregates its workers' registries (see main.ts).

import type { FastifyInstance } from "fastify";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { VerifierLibrary } from "../platform/signature-verifier.ts";
import type { BodyBudget } from "./body-parsing.ts";
import type { ConnectionCap, ConnectionCounts } from "./connection-caps.ts";

export class HttpMetrics {
  readonly registry: Registry;
  readonly #duration: Histogram<"method" | "route" | "status">;
  readonly #refused: Counter<"cap">;
  readonly #verifier: Gauge<"library">;
  #connections: ConnectionCounts | null = null;
  #bodyBudget: BodyBudget | null = null;

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
    this.#refused = new Counter({
      name: "counterpart_connections_refused_total",
      help: "Connections to the partner API closed unread because a cap was reached: the client address's (cap=address, CONNECTIONS_PER_ADDRESS_MAX) or the listener's (cap=listener, CONNECTIONS_MAX)",
      labelNames: ["cap"],
      registers: [this.registry],
    });
    // Both series from the start, at 0: an alert on their rate needs them before the first refusal.
    for (const cap of ["address", "listener"] as const) this.#refused.inc({ cap }, 0);
    // Summed over the workers by the primary: a process on node:crypto is one to look at.
    this.#verifier = new Gauge({
      name: "counterpart_signature_verifier_processes",
      help: "API processes verifying partners' signatures with each library (SIGNATURE_VERIFIER); library=node where libsodium's add-on was not loaded",
      labelNames: ["library"],
      registers: [this.registry],
    });
    const connections = () => this.#connections;
    new Gauge({
      name: "counterpart_connections_open",
      help: "Connections open on the partner API's listener, as counted against CONNECTIONS_MAX",
      registers: [this.registry],
      collect() {
        this.set(connections()?.open() ?? 0);
      },
    });
    const bodyBudget = () => this.#bodyBudget;
    new Gauge({
      name: "counterpart_request_body_bytes_held",
      help: "Request body bytes the process holds (being read, or read and not yet answered), as counted against BODY_BYTES_IN_FLIGHT_MAX",
      registers: [this.registry],
      collect() {
        this.set(bodyBudget()?.held() ?? 0);
      },
    });
    new Counter({
      name: "counterpart_request_bodies_refused_total",
      help: "Request bodies refused with a 503 because the process held BODY_BYTES_IN_FLIGHT_MAX of bodies",
      registers: [this.registry],
      collect() {
        const refused = bodyBudget()?.refused() ?? 0;
        this.reset();
        this.inc(refused);
      },
    });
  }

  /** Counts a connection a cap refused (http/connection-caps.ts). */
  connectionRefused(cap: ConnectionCap): void {
    this.#refused.inc({ cap });
  }

  /** Reports the open connections of the listener whose caps keep `counts`. */
  observeConnections(counts: ConnectionCounts): void {
    this.#connections = counts;
  }

  /** Reports the library the process verifies signatures with (1 for it, 0 for the other). */
  observeSignatureVerifier(library: VerifierLibrary): void {
    for (const each of ["libsodium", "node"] as const)
      this.#verifier.set({ library: each }, each === library ? 1 : 0);
  }

  /** Reports the process's budget of request body bytes. */
  observeBodyBudget(budget: BodyBudget): void {
    this.#bodyBudget = budget;
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
