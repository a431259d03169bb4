// What a request's two log lines cost ("incoming request", "request completed", as Fastify writes
// them) with the service's logger (redaction by one walk, platform/logger.ts), against the same
// lines with pino's `redact` paths that covered the same keys before (a wildcard path per key and
// depth), and against pino with no redaction (the reference). In-process, into a sink that drops
// the bytes, best of 5 rounds.

import { Writable } from "node:stream";
import pino from "pino";
import { createLogger, sensitiveKeys } from "../../packages/server/src/platform/logger.ts";
import type { Scenario, ScenarioReport } from "../lib.ts";

/** pino's `redact` paths for every sensitive key at the first four levels (the former setting). */
const wildcardPaths = [...sensitiveKeys].flatMap((k) => {
  const key = /^[A-Za-z_]\w*$/.test(k) ? `.${k}` : `["${k}"]`;
  return [/^[A-Za-z_]\w*$/.test(k) ? k : `["${k}"]`, `*${key}`, `*.*${key}`, `*.*.*${key}`];
});

function sink(): Writable {
  return new Writable({
    write(_chunk, _encoding, done) {
      done();
    },
  });
}

const fakeRequest = {
  req: {
    method: "GET",
    url: "/v1/partner/balances/AED?partner_client_id=client-0001",
    host: "127.0.0.1:3000",
    remoteAddress: "127.0.0.1",
    remotePort: 50_123,
  },
  reqId: "req-1a",
};
const fakeReply = { res: { statusCode: 200 }, responseTime: 1.234, reqId: "req-1a" };

function microsPerRequest(logger: pino.Logger, requests: number): number {
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 5; round++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < requests; i++) {
      logger.info(fakeRequest, "incoming request");
      logger.info(fakeReply, "request completed");
    }
    best = Math.min(best, Number(process.hrtime.bigint() - started) / 1000 / requests);
  }
  return best;
}

export const logging: Scenario = {
  name: "logging",
  description: "a request's two log lines: the service's redaction against pino's redact paths and none",

  async run(): Promise<ScenarioReport> {
    const base = { base: { pid: 1 }, timestamp: pino.stdTimeFunctions.isoTime };
    const targets = [
      { name: "no redaction (reference)", logger: pino(base, sink()) },
      { name: "service logger (one walk)", logger: createLogger("info", sink()) },
      {
        name: `pino redact paths (${wildcardPaths.length})`,
        logger: pino({ ...base, redact: { paths: wildcardPaths, censor: "[redacted]" } }, sink()),
      },
    ];
    const rows = targets.map((t) => ({
      target: t.name,
      microsPerRequest: microsPerRequest(t.logger, 20_000),
    }));
    const width = Math.max(...rows.map((r) => r.target.length));
    process.stdout.write(
      `\nlog lines per request (best of 5 rounds of 20,000)\n${"target".padEnd(width)}  µs/request\n`,
    );
    for (const r of rows)
      process.stdout.write(`${r.target.padEnd(width)}  ${r.microsPerRequest.toFixed(2)}\n`);
    const [reference, service, paths] = rows.map((r) => r.microsPerRequest) as [number, number, number];
    const ratios = {
      service_over_reference: service / reference,
      redact_paths_over_reference: paths / reference,
    };
    const notes = [
      `the service's logger: ${service.toFixed(1)} µs per request, ${(service - reference).toFixed(1)} µs over no redaction; pino's redact paths: ${paths.toFixed(1)} µs`,
    ];
    process.stdout.write(`${notes[0]}\n`);
    return { name: "logging", ok: true, targets: [], ratios, serverProblems: {}, notes, rows };
  },
};
