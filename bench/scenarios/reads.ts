// Signed reads on PostgreSQL, Counterpart against the reference (bench/compare.ts) on the same
// database in the same run: a client's balances, the asset pairs, one order, a page of orders.
// Every request freshly signed; 32 connections (BENCH_CONNECTIONS replaces them). Before the
// loads, each client gets a few deposits through the service, so balances and orders exist.
//
// Each path's two sides share its time: BENCH_SLICES slices each (default 5, of 2 s at the default
// 10 s), alternated, so that a drift of the host's speed weighs on both (compare.ts,
// measureAlternated).
//
// Environment (besides run.ts's): BENCH_DATABASE_URL, BENCH_WORKERS, BENCH_CLIENTS (see
// deposits.ts), BENCH_SLICES.
//
// Then each read's bare twin behind the same verification (the reference's /bare/…: the read's
// answer kept, no SQL) is loaded the same way, and each read's server CPU per request is printed
// against its twin's: the issue bounds it at 1.3 times.

import { isDeepStrictEqual } from "node:util";
import {
  type Comparison,
  comparison,
  measureAlternated,
  measureLoad,
  printComparisons,
  type Side,
  startPair,
} from "../compare.ts";
import {
  fetchOnce,
  loadNotes,
  printTable,
  type RequestSpec,
  type Scenario,
  type ScenarioReport,
  type TargetResult,
} from "../lib.ts";
import { intFromEnv } from "../proc.ts";

/** Deposits per client before the reads: orders to page through. */
const depositsPerClient = 4;

export const reads: Scenario = {
  name: "reads",
  description:
    "signed reads (balances, asset pairs, one order, an orders page) on PostgreSQL, Counterpart vs reference",

  async run(ctx): Promise<ScenarioReport> {
    const notes: string[] = [];
    const connections = process.env.BENCH_CONNECTIONS ? ctx.connections : 32;
    const rounds = intFromEnv("BENCH_SLICES", 5, 1, 50);
    const pair = await startPair(ctx, { referenceAed: "0" });
    const { partner, service, reference } = pair;

    let orderId: number | null = null;
    for (let round = 0; round < depositsPerClient; round++) {
      for (let n = 1; n <= pair.clientCount; n++) {
        const res = await fetchOnce(
          service.partnerUrl,
          {
            method: "POST",
            path: "/v1/partner/deposits",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({
              partner_client_id: `client-${n}`,
              asset_id: "AED",
              amount: "1000.00",
              partner_order_ref: `bench-read-${round}-${n}`,
            }),
          },
          partner,
        );
        if (res.status !== 200) throw new Error(`deposit answered ${res.status}: ${res.body.toString()}`);
        orderId ??= (JSON.parse(res.body.toString()) as { result: { id: number } }).result.id;
      }
    }

    // `same`: the reference's answer is the service's, value for value.
    const paths: {
      name: string;
      request: RequestSpec;
      items?: (body: unknown) => number;
      same?: boolean;
    }[] = [
      {
        name: "balances",
        request: { method: "GET", path: "/v1/partner/balances?partner_client_id=client-7" },
        items: (b) => (b as { items: unknown[] }).items.length,
        same: true,
      },
      {
        name: "asset-pairs",
        request: { method: "GET", path: "/v1/partner/asset-pairs" },
        items: (b) => (b as { items: unknown[] }).items.length,
        same: true,
      },
      { name: "one order", request: { method: "GET", path: `/v1/partner/orders/${orderId}` } },
      {
        name: "orders page",
        request: { method: "GET", path: "/v1/partner/orders?page_size=20" },
        items: (b) => (b as { items: unknown[] }).items.length,
      },
    ];

    // Both answer 200 with as many items before anything is measured.
    for (const p of paths) {
      const answers = [
        await fetchOnce(service.partnerUrl, p.request, partner),
        await fetchOnce(reference.url, p.request, partner),
      ];
      for (const [i, a] of answers.entries()) {
        if (a.status !== 200) {
          throw new Error(
            `${p.name}: ${i === 0 ? "Counterpart" : "the reference"} answered ${a.status}: ${a.body.toString().slice(0, 300)}`,
          );
        }
      }
      const [cpBody, refBody] = answers.map((a) => JSON.parse(a.body.toString()) as unknown);
      if (p.items !== undefined) {
        const [cp, ref] = [p.items(cpBody), p.items(refBody)];
        if (cp !== ref) notes.push(`${p.name}: Counterpart answered ${cp} items, the reference ${ref}`);
      }
      if (p.same === true && !isDeepStrictEqual(cpBody, refBody)) {
        notes.push(`${p.name}: the reference's answer differs from Counterpart's`);
      }
    }

    const comparisons: Comparison[] = [];
    const targets: TargetResult[] = [];
    for (const p of paths) {
      const m = await measureAlternated({
        dbName: pair.dbName,
        warmupS: ctx.warmupS,
        durationS: ctx.durationS,
        rounds,
        sides: (
          [
            ["Counterpart", service.partnerUrl, service.child.pid],
            ["reference", reference.url, reference.child.pid],
          ] as const
        ).map(([who, url, pid]) => ({
          label: `${p.name} (${who})`,
          rootPid: pid,
          load: { url, request: p.request, partner, connections, durationS: ctx.durationS },
        })),
      });
      notes.push(...m.notes);
      targets.push(...m.measured.map((x) => x.target));
      const [cp, ref] = m.measured.map((x) => x.side);
      if (cp === undefined || ref === undefined) throw new Error("unreachable");
      comparisons.push(
        comparison(
          {
            scenario: "reads",
            path: `signed ${p.name}`,
            unit: "request",
            connections,
            durationS: ctx.durationS,
            target: 1.0,
          },
          cp,
          ref,
        ),
      );
    }

    // The second bound on reads: server CPU per request ≤ 1.3 × that of a bare route plus
    // one verification. The bare route answers "the same body": each read is held to its
    // own bare twin (the reference's /bare/…: the same answer for the same target, kept from its
    // first call, sent behind the same verification with no SQL; same processes, same
    // connections). The asset-pairs twin, the yardstick of every read until 8 December, is
    // printed beside it.
    const twins: { path: string; side: Side }[] = [];
    for (const p of paths) {
      const request: RequestSpec = {
        ...p.request,
        path: p.request.path.replace(/^\/v1\/partner\//, "/bare/"),
      };
      const [twin, real] = [
        await fetchOnce(reference.url, request, partner),
        await fetchOnce(reference.url, p.request, partner),
      ];
      if (twin.status !== 200) throw new Error(`${p.name}: the bare twin answered ${twin.status}`);
      if (twin.body.toString() !== real.body.toString()) {
        notes.push(`${p.name}: the bare twin's answer differs from the reference's read`);
      }
      const bare = await measureLoad({
        label: `${p.name}: bare twin + verify (reference)`,
        rootPid: reference.child.pid,
        dbName: pair.dbName,
        warmupS: ctx.warmupS,
        load: { url: reference.url, request, partner, connections, durationS: ctx.durationS },
      });
      notes.push(...bare.notes);
      targets.push(bare.target);
      twins.push({ path: `signed ${p.name}`, side: bare.side });
    }
    const pairsTwin = twins.find((t) => t.path === "signed asset-pairs")?.side;
    if (pairsTwin === undefined) throw new Error("unreachable");

    printComparisons(
      `reads (${connections} connections, ${ctx.durationS} s each in ${rounds} alternated slices, ${ctx.warmupS} s warm-up, ${pair.workers} processes per server)`,
      comparisons,
    );
    const cpuBound = comparisons.map((c) => {
      const twin = twins.find((t) => t.path === c.path)?.side;
      if (twin === undefined) throw new Error("unreachable");
      return {
        path: c.path,
        counterpart_us: c.counterpart.serverCpuUsPerOp,
        reference_us: c.reference.serverCpuUsPerOp,
        bare_verify_us: twin.serverCpuUsPerOp,
        ratio: c.counterpart.serverCpuUsPerOp / twin.serverCpuUsPerOp,
        reference_ratio: c.reference.serverCpuUsPerOp / twin.serverCpuUsPerOp,
        pairs_bare_verify_us: pairsTwin.serverCpuUsPerOp,
        ratio_to_pairs_bare: c.counterpart.serverCpuUsPerOp / pairsTwin.serverCpuUsPerOp,
      };
    });
    printTable(
      "server CPU per read against its bare twin (the same answer, no SQL) plus one verification",
      [
        "path",
        "CP srv CPU µs/req",
        "twin + verify µs/req",
        "÷ twin",
        "target ≤ 1.3",
        "reference ÷ twin",
        "÷ asset-pairs twin",
      ],
      cpuBound.map((b) => [
        b.path,
        b.counterpart_us.toFixed(0),
        b.bare_verify_us.toFixed(0),
        b.ratio.toFixed(2),
        b.ratio <= 1.3 ? "met" : "NOT met",
        b.reference_ratio.toFixed(2),
        b.ratio_to_pairs_bare.toFixed(2),
      ]),
    );
    notes.push(...loadNotes(targets));
    return {
      name: "reads",
      ok: targets.every((t) => t.ok),
      targets,
      ratios: Object.fromEntries(comparisons.map((c) => [c.path, c.ratio])),
      serverProblems: {
        counterpart: service.child.output.problems().filter((l) => l !== "counterpart: stopped on SIGTERM"),
        reference: reference.child.output.problems(),
      },
      notes,
      comparisons,
      cpu_against_bare_verify: cpuBound,
      workers: pair.workers,
      clients: pair.clientCount,
    };
  },
};
