// What the framework, authentication and the database cost on the PGlite sandbox, every request
// freshly signed, against a bare Fastify route (no auth, no DB) answering a JSON body of the same
// bytes: the simplest signed read (GET /v1/partner/asset-pairs), and a signed deposit (POST
// /v1/partner/deposits, 1 AED to a verified client, a new reference each time). Issue 15 bounds the
// sandbox's server CPU at 1 ms per signed read and 2 ms per deposit; both are printed beside them.

import fs from "node:fs";
import path from "node:path";
import {
  depositRequest,
  fetchOnce,
  loadNotes,
  measureTarget,
  onboardClient,
  printTargets,
  type RequestSpec,
  type Scenario,
  type ScenarioReport,
  startPortReporter,
  startService,
  type TargetResult,
} from "../lib.ts";

const assetPairs: RequestSpec = { method: "GET", path: "/v1/partner/asset-pairs" };
const deposit = depositRequest("bench-foundation-1", `foundation-${process.pid}`);
/** The paths measured, each under its name in the labels and in `bounds`. */
const paths = [
  ["asset-pairs", assetPairs],
  ["deposits", deposit],
] as const;
/** Issue 15's bounds for the sandbox, µs of server CPU per request. */
const bounds = { "asset-pairs": 1_000, deposits: 2_000 } as const;

export const foundation: Scenario = {
  name: "foundation",
  description:
    "signed GET /v1/partner/asset-pairs and signed deposits (PGlite) vs a bare Fastify route with the same JSON body",

  async run(ctx): Promise<ScenarioReport> {
    const notes: string[] = [];
    // The demo partner's default budget (6,000 reads a minute) is below this load: no rate limits
    // here (the rate-limits scenario measures what they cost).
    const service = await startService(ctx.cleanup, {
      dataDir: path.join(ctx.scratchDir, "data"),
      env: { RATE_LIMITS: "off" },
    });
    const partner = service.partner;
    if (partner === null) throw new Error("the service wrote no demo partner (is it on PGlite?)");

    await onboardClient(service.partnerUrl, partner, "bench-foundation-1");

    // Each path's answer, written for the bare route to answer with the same bytes.
    const bareArgs: string[] = [path.join("bench", "bare-server.ts")];
    const probes = new Map<string, Buffer>();
    for (const [name, spec] of paths) {
      const probe = await fetchOnce(service.partnerUrl, spec, partner);
      if (probe.status !== 200) {
        throw new Error(
          `signed ${spec.method} ${spec.path} answered ${probe.status}: ${probe.body.toString().slice(0, 300)}`,
        );
      }
      const bodyFile = path.join(ctx.scratchDir, `${name}.json`);
      fs.writeFileSync(bodyFile, probe.body);
      bareArgs.push(spec.method === "GET" ? spec.path : `${spec.method} ${spec.path}`, bodyFile);
      probes.set(name, probe.body);
    }

    const bare = await startPortReporter(ctx.cleanup, "bare-server", bareArgs);
    for (const [name, spec] of paths) {
      const expected = probes.get(name) ?? Buffer.alloc(0);
      const bareProbe = await fetchOnce(bare.url, spec);
      if (bareProbe.status !== 200 || bareProbe.body.length !== expected.length) {
        throw new Error(
          `bare server answered ${spec.method} ${spec.path} with ${bareProbe.status} and ${bareProbe.body.length} bytes; expected 200 with ${expected.length}`,
        );
      }
      if (!bareProbe.body.equals(expected))
        notes.push(`${name}: bare body has the same size but different bytes`);
    }
    process.stdout.write(
      `bench: response bodies ${probes.get("asset-pairs")?.length} and ${probes.get("deposits")?.length} bytes; service pid ${service.child.pid}, bare server pid ${bare.child.pid}\n`,
    );

    const common = { connections: ctx.connections, durationS: ctx.durationS };
    const targets: TargetResult[] = [];
    for (const [name, spec] of paths) {
      // "(Counterpart)" and "(bare route)": the sides `npm run bench:perf` records and compares.
      targets.push(
        await measureTarget({
          label: `${name} (Counterpart)`,
          serverPid: service.child.pid,
          warmupS: ctx.warmupS,
          load: { ...common, url: service.partnerUrl, request: spec, partner },
        }),
        await measureTarget({
          label: `${name} (bare route)`,
          serverPid: bare.child.pid,
          warmupS: ctx.warmupS,
          load: { ...common, url: bare.url, request: spec },
        }),
      );
    }
    const [signed, plain, deposits, bareDeposits] = targets as [
      TargetResult,
      TargetResult,
      TargetResult,
      TargetResult,
    ];

    const ratios = {
      throughput_signed_over_bare: signed.reqPerSecMean / plain.reqPerSecMean,
      cpu_per_request_signed_over_bare: signed.serverCpuUsPerRequest / plain.serverCpuUsPerRequest,
      throughput_deposits_over_bare: deposits.reqPerSecMean / bareDeposits.reqPerSecMean,
      cpu_per_request_deposits_over_bare: deposits.serverCpuUsPerRequest / bareDeposits.serverCpuUsPerRequest,
      read_cpu_over_bound: signed.serverCpuUsPerRequest / bounds["asset-pairs"],
      deposit_cpu_over_bound: deposits.serverCpuUsPerRequest / bounds.deposits,
    };
    printTargets(
      `foundation (${ctx.connections} connections, ${ctx.durationS} s each, ${ctx.warmupS} s warm-up)`,
      targets,
    );
    process.stdout.write(
      `\nsigned/bare throughput       ${ratios.throughput_signed_over_bare.toFixed(3)}\n` +
        `signed/bare CPU per request  ${ratios.cpu_per_request_signed_over_bare.toFixed(2)}\n` +
        `deposit/bare throughput      ${ratios.throughput_deposits_over_bare.toFixed(3)}\n` +
        `deposit/bare CPU per request ${ratios.cpu_per_request_deposits_over_bare.toFixed(2)}\n` +
        `signed read: ${signed.serverCpuUsPerRequest.toFixed(0)} µs of server CPU, bound ${bounds["asset-pairs"]} µs\n` +
        `deposit:     ${deposits.serverCpuUsPerRequest.toFixed(0)} µs of server CPU, bound ${bounds.deposits} µs\n`,
    );

    notes.push(...loadNotes(targets));
    return {
      name: "foundation",
      ok: targets.every((t) => t.ok),
      targets,
      ratios,
      serverProblems: {
        counterpart: service.child.output.problems(),
        "bare-server": bare.child.output.problems(),
      },
      notes,
      response_body_bytes: Object.fromEntries([...probes].map(([name, body]) => [name, body.length])),
    };
  },
};
