// What the framework, authentication and the database cost on the simplest signed read: GET
// /v1/partner/asset-pairs on the PGlite sandbox, every request freshly signed, against a bare
// Fastify route (no auth, no DB) answering a JSON body of the same bytes.

import fs from "node:fs";
import path from "node:path";
import {
  fetchOnce,
  loadNotes,
  measureTarget,
  printTargets,
  type RequestSpec,
  type Scenario,
  type ScenarioReport,
  startPortReporter,
  startService,
} from "../lib.ts";

const assetPairs: RequestSpec = { method: "GET", path: "/v1/partner/asset-pairs" };

export const foundation: Scenario = {
  name: "foundation",
  description: "signed GET /v1/partner/asset-pairs (PGlite) vs a bare Fastify route with the same JSON body",

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

    const probe = await fetchOnce(service.partnerUrl, assetPairs, partner);
    if (probe.status !== 200) {
      throw new Error(
        `signed ${assetPairs.path} answered ${probe.status}: ${probe.body.toString().slice(0, 300)}`,
      );
    }
    const bodyFile = path.join(ctx.scratchDir, "asset-pairs.json");
    fs.writeFileSync(bodyFile, probe.body);

    const bare = await startPortReporter(ctx.cleanup, "bare-server", [
      path.join("bench", "bare-server.ts"),
      assetPairs.path,
      bodyFile,
    ]);
    const bareProbe = await fetchOnce(bare.url, assetPairs);
    if (bareProbe.status !== 200 || bareProbe.body.length !== probe.body.length) {
      throw new Error(
        `bare server answered ${bareProbe.status} with ${bareProbe.body.length} bytes; expected 200 with ${probe.body.length}`,
      );
    }
    if (!bareProbe.body.equals(probe.body)) notes.push("bare body has the same size but different bytes");
    process.stdout.write(
      `bench: response body ${probe.body.length} bytes; service pid ${service.child.pid}, bare server pid ${bare.child.pid}\n`,
    );

    const common = { connections: ctx.connections, durationS: ctx.durationS };
    const signed = await measureTarget({
      // "(Counterpart)" and "(bare route)": the sides `npm run bench:perf` records and compares.
      label: "asset-pairs (Counterpart)",
      serverPid: service.child.pid,
      warmupS: ctx.warmupS,
      load: { ...common, url: service.partnerUrl, request: assetPairs, partner },
    });
    const plain = await measureTarget({
      label: "asset-pairs (bare route)",
      serverPid: bare.child.pid,
      warmupS: ctx.warmupS,
      load: { ...common, url: bare.url, request: assetPairs },
    });
    const targets = [signed, plain];

    const ratios = {
      throughput_signed_over_bare: signed.reqPerSecMean / plain.reqPerSecMean,
      cpu_per_request_signed_over_bare: signed.serverCpuUsPerRequest / plain.serverCpuUsPerRequest,
    };
    printTargets(
      `foundation (${ctx.connections} connections, ${ctx.durationS} s each, ${ctx.warmupS} s warm-up)`,
      targets,
    );
    process.stdout.write(
      `\nsigned/bare throughput       ${ratios.throughput_signed_over_bare.toFixed(3)}\n` +
        `signed/bare CPU per request  ${ratios.cpu_per_request_signed_over_bare.toFixed(2)}\n`,
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
      response_body_bytes: probe.body.length,
    };
  },
};
