// The bank test (`npm run test:faults`): three `counterpart serve` processes on one throwaway
// PostgreSQL cluster, 32 workers sending deposits, withdrawals, quote → execute (with races on one
// token), replays of references with the same and another body, reads, invalid requests and
// another partner's traffic, while a seeded schedule kills API processes (SIGKILL, then restart),
// crash-restarts PostgreSQL and terminates its backends. Every operation is recorded with its
// invocation and its end; afterwards the state is read through the partner API and the checker
// (checker.ts) judges the history. Prints its figures and `N passed, N failed`; exits 1 on any
// violation.
//
// Environment: FAULT_SEED (printed; it fixes the fault schedule and each worker's sequence of
// choices, though which earlier order a read or replay picks depends on timing), FAULT_OPS (least
// operations, default 10000), FAULT_WORKERS (default 32), FAULT_COUNTS (a shorter schedule while
// working on the test; fewer faults or workers than the minimums fail the run).

import { createPrivateKey, type KeyObject, randomInt } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { formatDecimal, generateKeyPair, ONE, signRequest } from "@counterpart/protocol";
import { clientPayload } from "../testing/fixtures.ts";
import { canStartCluster, type PgCluster, startPgCluster } from "../testing/pg-cluster.ts";
import { exitOf, type ServiceProcess, startService, tempDataDir } from "../testing/processes.ts";
import { checkHistory } from "./checker.ts";
import {
  answerKey,
  type Balance,
  type ExitRecord,
  type FaultKind,
  type FaultRecord,
  type History,
  type Op,
  type OpKind,
  type Order,
  type Outcome,
  orderTotalFilters,
  type PartnerFinal,
  type PartnerName,
  resultOrder,
} from "./history.ts";
import { mulberry32, type Rng, type ScheduledFault, scheduleFaults } from "./schedule.ts";

function intFromEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const v = Number(raw);
  if (!Number.isSafeInteger(v) || v < min || v > max)
    throw new Error(`${name}: expected an integer ${min}..${max}`);
  return v;
}

const seed = intFromEnv("FAULT_SEED", randomInt(1, 2 ** 31 - 1), 0, 2 ** 31 - 1);
const minOperations = intFromEnv("FAULT_OPS", 10_000, 1, 1_000_000);
const workerCount = intFromEnv("FAULT_WORKERS", 32, 1, 256);
/** FAULT_COUNTS=kill:1,pg_restart:1,terminate:1 makes a short run while working on the test (it then fails its minimums). */
const requiredFaults: Record<FaultKind, number> = { kill: 5, pg_restart: 1, terminate: 5 };
const scheduledFaults: Record<FaultKind, number> = { ...requiredFaults };
for (const piece of (process.env.FAULT_COUNTS ?? "").split(",").filter((p) => p !== "")) {
  const [kind, n] = piece.split(":");
  if (!(kind! in scheduledFaults) || !/^[0-9]{1,2}$/.test(n ?? ""))
    throw new Error(`FAULT_COUNTS: bad "${piece}"`);
  scheduledFaults[kind as FaultKind] = Number(n);
}
const processCount = 3;
const requestTimeoutMs = 10_000;
const recoveryAfterMs = 10_000;
/** The whole test, setup to cleanup, stays well inside CI's limits. */
const wholeRunMaxMs = 9.5 * 60_000;
/** The traffic phase ends by then even if the operation count is not reached. */
const trafficMaxMs = 7.5 * 60_000;
const adminToken = "fault-test-admin-token-0123456789";
const clientsA = 16;
/** Partner B's clients reuse the ids of A's first ones: isolation must hold on equal names. */
const clientsB = 4;
const prices: Record<string, { buy: string; sell: string }> = {
  "BTC-AED": { buy: "350000.00", sell: "349000.00" },
  "BTC-USD": { buy: "95000.00", sell: "94800.00" },
};

const t0 = performance.now();
const now = () => Math.round(performance.now() - t0);
const log = (line: string) => process.stdout.write(`${line}\n`);

// ---------------------------------------------------------------------------------------------
// API processes

interface ApiProcess {
  index: number;
  dataDir: string;
  service: ServiceProcess | null;
  /** Workers send only to processes that are up. */
  up: boolean;
  /** Set while the harness kills or stops it on purpose. */
  expectedExit: boolean;
  starts: number;
  /** The start under way, if any. */
  starting: Promise<void> | null;
}

let databaseUrl = "";
const apis: ApiProcess[] = [];
const unexpectedExits: ExitRecord[] = [];
/** The traffic is over: workers, retries and the fault schedule stop. */
let stopping = false;
/** The test is cleaning up: exits are expected from now on. */
let shuttingDown = false;

function serveEnv(index: number): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    ADMIN_TOKEN: adminToken,
    PORT: "0",
    ADMIN_PORT: index === 0 ? "0" : "off",
    PRICE_FEED: "manual",
    // Prices are pinned once; they must not go stale during the run.
    PRICE_STALE_AFTER_S: "86400",
    LOG_LEVEL: "warn",
    DATABASE_POOL_SIZE: "8",
  };
}

/** Starts the process; a start already under way is joined, never doubled. */
function startApi(p: ApiProcess): Promise<void> {
  if (p.up) return Promise.resolve();
  p.starting ??= (async () => {
    try {
      const service = await startService({ ...serveEnv(p.index), DATA_DIR: p.dataDir }, 60_000);
      p.service = service;
      p.starts++;
      p.expectedExit = false;
      const child = service.child;
      child.once("exit", (code, signal) => {
        if (p.service?.child !== child) return;
        p.up = false;
        if (p.expectedExit || shuttingDown) return;
        unexpectedExits.push({
          process: p.index,
          atMs: now(),
          code,
          signal,
          tail: lastWords(service.output()),
        });
        log(`!! API process ${p.index} exited on its own (code ${code}, signal ${signal}); restarting it`);
        // Keep the run going so everything else is still measured; the exit itself is a violation.
        void restartAfterCrash(p);
      });
      p.up = true;
    } finally {
      p.starting = null;
    }
  })();
  return p.starting;
}

/** What a process wrote last, without stack frames and empty fields: enough to name the cause. */
function lastWords(output: string): string {
  const lines = output
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("at ") && !/^\w+: undefined,?$/.test(l));
  return lines.slice(-14).join(" | ").slice(-900);
}

async function restartAfterCrash(p: ApiProcess): Promise<void> {
  for (let attempt = 0; attempt < 10 && !shuttingDown && !p.up; attempt++) {
    try {
      await startApi(p);
      return;
    } catch (err) {
      log(`!! restart of API process ${p.index} failed: ${String(err).slice(0, 300)}`);
      await sleep(1_000);
    }
  }
}

async function killApi(p: ApiProcess): Promise<void> {
  const child = p.service?.child;
  if (child === undefined) return;
  p.expectedExit = true;
  p.up = false;
  const exited = exitOf(child);
  child.kill("SIGKILL");
  await exited;
}

function liveApis(): ApiProcess[] {
  return apis.filter((p) => p.up && p.service !== null);
}

// ---------------------------------------------------------------------------------------------
// Signed HTTP with a recorded outcome

const agents = new Map<string, http.Agent>();

function agentFor(base: string): http.Agent {
  let a = agents.get(base);
  if (a === undefined) {
    a = new http.Agent({ keepAlive: true, maxSockets: 64 });
    agents.set(base, a);
  }
  return a;
}

function send(
  base: string,
  method: string,
  target: string,
  headers: Record<string, string>,
  payload: string | undefined,
): Promise<Outcome> {
  const url = new URL(base);
  if (url.hostname !== "127.0.0.1") throw new Error(`refusing to send to ${base}: not loopback`);
  return new Promise((resolve) => {
    let settled = false;
    const done = (o: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(o);
    };
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path: target,
        headers: payload === undefined ? headers : { ...headers, "content-type": "application/json" },
        agent: agentFor(base),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", () => done({ type: "indeterminate", reason: "reset" }));
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          const text = Buffer.concat(chunks).toString("utf8");
          if (status >= 500)
            return done({ type: "indeterminate", reason: "5xx", status, detail: text.slice(0, 200) });
          let body: unknown = null;
          try {
            body = text === "" ? null : JSON.parse(text);
          } catch {
            body = text.slice(0, 200);
          }
          done({ type: "answer", status, body });
        });
      },
    );
    const timer = setTimeout(() => {
      done({ type: "indeterminate", reason: "timeout" });
      req.destroy();
    }, requestTimeoutMs);
    req.on("error", (err: NodeJS.ErrnoException) =>
      done({ type: "indeterminate", reason: err.code === "ECONNREFUSED" ? "refused" : "reset" }),
    );
    req.end(payload);
  });
}

interface PartnerCreds {
  name: PartnerName;
  id: string;
  key: KeyObject;
}

const partnerOf: Partial<Record<PartnerName, PartnerCreds>> = {};
const wrongKey = createPrivateKey(generateKeyPair().privateKeyPem);
/** The last signing time of each POST body: identical bodies never share a timestamp (replay guard). */
const lastSigned = new Map<string, number>();

async function signingTime(payload: string | undefined): Promise<number> {
  if (payload === undefined) return Date.now();
  for (let i = 0; i < 50; i++) {
    const t = Date.now();
    if (lastSigned.get(payload) !== t) {
      lastSigned.set(payload, t);
      return t;
    }
    await sleep(1);
  }
  return Date.now();
}

const ops: Op[] = [];
let opSeq = 0;

type OpMeta = Omit<Op, "id" | "partner" | "kind" | "label" | "process" | "invokedMs" | "endedMs" | "outcome">;

interface CallSpec {
  partner: PartnerName;
  kind: OpKind;
  label: string;
  method: "GET" | "POST";
  target: string;
  body?: unknown;
  meta?: OpMeta;
  /** Sign with a key the partner never registered. */
  badKey?: boolean;
  /** Send to this process when it is up. */
  via?: number;
}

async function pickApi(rng: Rng | null, via?: number): Promise<ApiProcess | null> {
  for (let i = 0; i < 200; i++) {
    const live = liveApis();
    if (via !== undefined) {
      const p = apis[via % apis.length]!;
      if (p.up && p.service !== null) return p;
    }
    if (live.length > 0) return live[rng === null ? 0 : rng.int(live.length)]!;
    await sleep(50);
  }
  return null;
}

async function call(rng: Rng | null, spec: CallSpec): Promise<Op> {
  const creds = partnerOf[spec.partner]!;
  const payload = spec.body === undefined ? undefined : JSON.stringify(spec.body);
  const api = await pickApi(rng, spec.via);
  const t = await signingTime(payload);
  const headers = signRequest({
    partnerId: creds.id,
    privateKey: spec.badKey ? wrongKey : creds.key,
    method: spec.method,
    target: spec.target,
    body: payload ?? "",
    nowMs: t,
  });
  const invokedMs = now();
  const outcome: Outcome =
    api === null || api.service === null
      ? { type: "indeterminate", reason: "refused" }
      : await send(api.service.partnerUrl, spec.method, spec.target, headers, payload);
  const op: Op = {
    id: ++opSeq,
    partner: spec.partner,
    kind: spec.kind,
    label: spec.label,
    process: api?.index ?? -1,
    invokedMs,
    endedMs: now(),
    outcome,
    ...spec.meta,
  };
  ops.push(op);
  return op;
}

/** A state-changing request retried with the same body while its end is indeterminate, as a partner would. */
async function callWithRetries(rng: Rng, spec: CallSpec, retriesMax = 3): Promise<Op> {
  let op = await call(rng, spec);
  for (let i = 0; i < retriesMax && op.outcome.type === "indeterminate" && !stopping; i++) {
    await sleep(300 + rng.int(700));
    op = await call(rng, { ...spec, label: `${spec.label} retry` });
  }
  return op;
}

async function admin(
  method: "GET" | "POST" | "PUT",
  url: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const adminUrl = apis[0]?.service?.adminUrl;
    if (adminUrl && apis[0]!.up) {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const o = await send(adminUrl, method, url, { authorization: `Bearer ${adminToken}` }, payload);
      if (o.type === "answer") return { status: o.status, body: o.body };
    }
    await sleep(500);
  }
  throw new Error(`admin ${method} ${url}: no answer`);
}

// ---------------------------------------------------------------------------------------------
// Workload

interface Acked {
  order: Order;
  ref: string;
  kind: "deposit" | "withdrawal" | "execute";
  body: Record<string, unknown>;
  /** Partner B may reuse this reference string (its own namespace); probes never look it up. */
  shareable: boolean;
}

const ackedA: Acked[] = [];
const ackedB: Acked[] = [];
const recentTokensA: string[] = [];
let baseSeq = 0;
const idsA = Array.from({ length: clientsA }, (_, i) => `client-${i + 1}`);
const idsB = Array.from({ length: clientsB }, (_, i) => `client-${i + 1}`);
const aOnly = idsA.slice(clientsB);

function pick<T>(rng: Rng, list: readonly T[]): T {
  return list[rng.int(list.length)]!;
}

/** A fiat amount with two decimals between lo and hi whole units. */
function fiatAmount(rng: Rng, lo: number, hi: number): string {
  const cents = BigInt(lo * 100 + rng.int((hi - lo) * 100));
  return formatDecimal((cents * ONE) / 100n).replace(/0{6}$/, "");
}

/** A BTC amount unique in the run: it fingerprints the quote, and so the order made from it. */
function uniqueBaseAmount(rng: Rng): string {
  const n = BigInt(++baseSeq) * 7n + BigInt(rng.int(7));
  return formatDecimal(ONE / 10_000n + n);
}

class Worker {
  readonly index: number;
  readonly rng: Rng;
  #refSeq = 0;
  constructor(index: number) {
    this.index = index;
    this.rng = mulberry32(seed ^ Math.imul(index + 1, 0x9e3779b9));
  }

  ref(prefix = ""): { ref: string; shareable: boolean } {
    const n = ++this.#refSeq;
    return {
      ref: `${prefix}w${String(this.index).padStart(2, "0")}-${String(n).padStart(6, "0")}`,
      shareable: n % 5 === 0,
    };
  }

  async funding(
    partner: PartnerName,
    kind: "deposit" | "withdrawal",
    label: string,
    client: string,
    asset: string,
    amount: string,
    refInfo: { ref: string; shareable: boolean },
  ) {
    const body = { partner_client_id: client, asset_id: asset, amount, partner_order_ref: refInfo.ref };
    const op = await callWithRetries(this.rng, {
      partner,
      kind,
      label,
      method: "POST",
      target: kind === "deposit" ? "/v1/partner/deposits" : "/v1/partner/withdrawals",
      body,
      meta: { ref: refInfo.ref, client, asset, amount },
    });
    const o = resultOrder(op.outcome);
    if (o !== null)
      (partner === "A" ? ackedA : ackedB).push({
        order: o,
        ref: refInfo.ref,
        kind,
        body,
        shareable: refInfo.shareable,
      });
    return op;
  }

  async deposit() {
    const asset = this.rng.int(3) === 0 ? "USD" : "AED";
    await this.funding(
      "A",
      "deposit",
      "deposit",
      pick(this.rng, idsA),
      asset,
      fiatAmount(this.rng, 20, asset === "USD" ? 400 : 1500),
      this.ref(),
    );
  }

  async withdrawal() {
    const asset = this.rng.int(3) === 0 ? "USD" : "AED";
    await this.funding(
      "A",
      "withdrawal",
      "withdrawal",
      pick(this.rng, idsA),
      asset,
      fiatAmount(this.rng, 1, asset === "USD" ? 300 : 1200),
      this.ref(),
    );
  }

  async quote(partner: PartnerName, client: string, label = "quote") {
    const pair = this.rng.int(3) === 0 ? "BTC-USD" : "BTC-AED";
    const side = this.rng.int(10) < 7 ? "buy" : "sell";
    const baseAmount = uniqueBaseAmount(this.rng);
    const op = await call(this.rng, {
      partner,
      kind: "quote",
      label,
      method: "POST",
      target: "/v1/partner/quotes",
      body: { partner_client_id: client, asset_pair: pair, side, base_amount: baseAmount },
      meta: { client, quote: { side, pair, baseAmount } },
    });
    const token = (
      op.outcome.type === "answer" && op.outcome.status === 200
        ? (op.outcome.body as { result?: { token?: unknown } }).result?.token
        : null
    ) as string | null | undefined;
    if (typeof token === "string" && partner === "A") {
      recentTokensA.push(token);
      if (recentTokensA.length > 50) recentTokensA.shift();
    }
    return { op, token: typeof token === "string" ? token : null };
  }

  async trade() {
    const client = pick(this.rng, idsA);
    const { op: q, token } = await this.quote("A", client);
    if (token === null) return;
    const refInfo = this.rng.int(100) < 85 ? this.ref() : null;
    const body = { partner_client_id: client, token, partner_order_ref: refInfo?.ref ?? null };
    const e = await callWithRetries(this.rng, {
      partner: "A",
      kind: "execute",
      label: refInfo === null ? "execute (no ref)" : "execute",
      method: "POST",
      target: "/v1/partner/quotes/execute",
      body,
      meta: { ref: refInfo?.ref ?? null, client, quoteOp: q.id },
    });
    const o = resultOrder(e.outcome);
    if (o !== null && refInfo !== null)
      ackedA.push({ order: o, ref: refInfo.ref, kind: "execute", body, shareable: refInfo.shareable });
  }

  /** Several executions of one token at once, on different processes: one order at most. */
  async race() {
    const client = pick(this.rng, idsA);
    const { op: q, token } = await this.quote("A", client, "quote for race");
    if (token === null) return;
    const n = 2 + this.rng.int(3);
    const first = this.rng.int(processCount);
    await Promise.all(
      Array.from({ length: n }, (_, i) => {
        const refInfo = i === n - 1 && this.rng.int(2) === 0 ? null : this.ref();
        return call(this.rng, {
          partner: "A",
          kind: "execute",
          label: "race execute",
          method: "POST",
          target: "/v1/partner/quotes/execute",
          body: { partner_client_id: client, token, partner_order_ref: refInfo?.ref ?? null },
          meta: { ref: refInfo?.ref ?? null, client, quoteOp: q.id },
          via: first + i,
        });
      }),
    );
  }

  async replaySame() {
    if (ackedA.length === 0) return this.deposit();
    const a = pick(this.rng, ackedA);
    const target =
      a.kind === "deposit"
        ? "/v1/partner/deposits"
        : a.kind === "withdrawal"
          ? "/v1/partner/withdrawals"
          : "/v1/partner/quotes/execute";
    const b = a.body as { partner_client_id: string; asset_id?: string; amount?: string; token?: string };
    await call(this.rng, {
      partner: "A",
      kind: a.kind,
      label: "replay same body",
      method: "POST",
      target,
      body: a.body,
      meta: {
        ref: a.ref,
        client: b.partner_client_id,
        ...(b.asset_id ? { asset: b.asset_id } : {}),
        ...(b.amount ? { amount: b.amount } : {}),
      },
    });
  }

  async replayOther() {
    if (ackedA.length === 0) return this.deposit();
    const a = pick(this.rng, ackedA);
    const variant = this.rng.int(4);
    const client = pick(this.rng, idsA);
    if (variant === 3) {
      // A fresh quote executed under a taken reference: 2020, and the token stays unused.
      const { op: q, token } = await this.quote("A", client, "quote for replay");
      if (token === null) return;
      await call(this.rng, {
        partner: "A",
        kind: "execute",
        label: "replay other body",
        method: "POST",
        target: "/v1/partner/quotes/execute",
        body: { partner_client_id: client, token, partner_order_ref: a.ref },
        meta: { ref: a.ref, client, quoteOp: q.id },
      });
      return;
    }
    const kind = variant === 0 ? "deposit" : "withdrawal";
    const asset = variant === 2 ? "USD" : "AED";
    const amount = fiatAmount(this.rng, 1, 50);
    await call(this.rng, {
      partner: "A",
      kind,
      label: "replay other body",
      method: "POST",
      target: kind === "deposit" ? "/v1/partner/deposits" : "/v1/partner/withdrawals",
      body: { partner_client_id: client, asset_id: asset, amount, partner_order_ref: a.ref },
      meta: { ref: a.ref, client, asset, amount },
    });
  }

  async readBalances(partner: PartnerName = "A") {
    const client = pick(this.rng, partner === "A" ? idsA : idsB);
    await call(this.rng, {
      partner,
      kind: "read_balances",
      label: "read balances",
      method: "GET",
      target: `/v1/partner/balances?partner_client_id=${client}`,
      meta: { client },
    });
  }

  async readOrder() {
    if (ackedA.length === 0) return this.readBalances();
    const a = pick(this.rng, ackedA);
    const byId = this.rng.int(2) === 0;
    await call(this.rng, {
      partner: "A",
      kind: "read_order",
      label: byId ? "read order by id" : "read order by ref",
      method: "GET",
      target: byId ? `/v1/partner/orders/${a.order.id}` : `/v1/partner/orders/ref/${a.ref}`,
      meta: { target: byId ? { id: a.order.id } : { ref: a.ref } },
    });
  }

  async listOrders() {
    const client = pick(this.rng, idsA);
    const page = 1 + this.rng.int(3);
    await call(this.rng, {
      partner: "A",
      kind: "list_orders",
      label: "list orders",
      method: "GET",
      target: `/v1/partner/orders?page=${page}&page_size=25&partner_client_id=${client}`,
      meta: { client },
    });
  }

  async invalid() {
    const client = pick(this.rng, idsA);
    const r = this.ref("x").ref;
    const inv = (
      label: string,
      method: "GET" | "POST",
      target: string,
      body: unknown,
      expect: string[],
      extra: Partial<CallSpec> = {},
    ) =>
      call(this.rng, {
        partner: "A",
        kind: "invalid",
        label: `invalid: ${label}`,
        method,
        target,
        body,
        meta: { ref: body === undefined ? undefined : r, client, expect },
        ...extra,
      });
    const deposit = (over: Record<string, unknown>) => ({
      partner_client_id: client,
      asset_id: "AED",
      amount: "10.00",
      partner_order_ref: r,
      ...over,
    });
    switch (this.rng.int(10)) {
      case 0:
        return inv("negative amount", "POST", "/v1/partner/deposits", deposit({ amount: "-5.00" }), ["422"]);
      case 1:
        return inv("too many decimals", "POST", "/v1/partner/deposits", deposit({ amount: "1.000000005" }), [
          "422",
        ]);
      case 2:
        return inv(
          "unknown client",
          "POST",
          "/v1/partner/deposits",
          deposit({ partner_client_id: `nobody-${r}` }),
          ["400/2008"],
        );
      case 3:
        return inv(
          "crypto withdrawal",
          "POST",
          "/v1/partner/withdrawals",
          deposit({ asset_id: "BTC", amount: "0.001" }),
          ["400/2012"],
        );
      case 4:
        return inv(
          "malformed token",
          "POST",
          "/v1/partner/quotes/execute",
          { partner_client_id: client, token: "qt_short", partner_order_ref: r },
          ["422"],
        );
      case 5:
        return inv(
          "unknown token",
          "POST",
          "/v1/partner/quotes/execute",
          { partner_client_id: client, token: `qt_${"A".repeat(43)}`, partner_order_ref: r },
          ["400/4008"],
        );
      case 6:
        return inv(
          "unknown pair",
          "POST",
          "/v1/partner/quotes",
          { partner_client_id: client, asset_pair: "DOGE-AED", side: "buy", base_amount: "1" },
          ["400/2013"],
        );
      case 7:
        return inv("wrong key", "POST", "/v1/partner/deposits", deposit({}), ["401"], { badKey: true });
      case 8:
        return inv("unknown order", "GET", "/v1/partner/orders/987654321", undefined, ["404"]);
      default:
        return inv("page_size 101", "GET", "/v1/partner/orders?page=1&page_size=101", undefined, ["422"]);
    }
  }

  /** Partner B's own traffic, on client ids that A uses too, sometimes with references A used. */
  async partnerB() {
    const client = pick(this.rng, idsB);
    const shared = ackedA.filter((a) => a.shareable);
    const useShared = this.rng.int(3) === 0 && shared.length > 0;
    let refInfo = this.ref("b");
    if (useShared) {
      const a = pick(this.rng, shared);
      if (!usedByB.has(a.ref)) refInfo = { ref: a.ref, shareable: false };
    }
    usedByB.add(refInfo.ref);
    switch (this.rng.int(4)) {
      case 0:
      case 1:
        await this.funding(
          "B",
          "deposit",
          useShared ? "B deposit (A's ref)" : "B deposit",
          client,
          "AED",
          fiatAmount(this.rng, 20, 800),
          refInfo,
        );
        return;
      case 2:
        await this.funding(
          "B",
          "withdrawal",
          "B withdrawal",
          client,
          "AED",
          fiatAmount(this.rng, 1, 600),
          refInfo,
        );
        return;
      default: {
        if (ackedB.length === 0) return this.readBalances("B");
        const a = pick(this.rng, ackedB);
        await call(this.rng, {
          partner: "B",
          kind: a.kind,
          label: "B replay same body",
          method: "POST",
          target: a.kind === "deposit" ? "/v1/partner/deposits" : "/v1/partner/withdrawals",
          body: a.body,
          meta: {
            ref: a.ref,
            client: String(a.body.partner_client_id),
            asset: String(a.body.asset_id),
            amount: String(a.body.amount),
          },
        });
      }
    }
  }

  /** Partner B looks at and acts on A's things: it must see and change nothing. */
  async probe() {
    const privateA = ackedA.filter((a) => !a.shareable);
    const a = privateA.length > 0 ? pick(this.rng, privateA) : null;
    const other = pick(this.rng, aOnly);
    const pr = (
      label: string,
      method: "GET" | "POST",
      target: string,
      body: unknown,
      expect: string[],
      meta: OpMeta = {},
    ) =>
      call(this.rng, {
        partner: "B",
        kind: "probe",
        label: `B probe: ${label}`,
        method,
        target,
        body,
        meta: { ...meta, expect },
      });
    switch (this.rng.int(7)) {
      case 0:
        if (a) return pr("A's order by id", "GET", `/v1/partner/orders/${a.order.id}`, undefined, ["404"]);
        return;
      case 1:
        if (a) return pr("A's order by ref", "GET", `/v1/partner/orders/ref/${a.ref}`, undefined, ["404"]);
        return;
      case 2:
        return pr(
          "A's client's balances",
          "GET",
          `/v1/partner/balances?partner_client_id=${other}`,
          undefined,
          ["400/2008"],
        );
      case 3:
        return pr("A's client's orders", "GET", `/v1/partner/orders?partner_client_id=${other}`, undefined, [
          "400/2008",
          "200-empty",
        ]);
      case 4: {
        const r = this.ref("bx").ref;
        return pr(
          "deposit to A's client",
          "POST",
          "/v1/partner/deposits",
          { partner_client_id: other, asset_id: "AED", amount: "10.00", partner_order_ref: r },
          ["400/2008"],
          { ref: r, client: other },
        );
      }
      case 5: {
        const token = recentTokensA.length > 0 ? pick(this.rng, recentTokensA) : null;
        if (token === null) return;
        const r = this.ref("bx").ref;
        const client = pick(this.rng, idsB);
        return pr(
          "execute A's token",
          "POST",
          "/v1/partner/quotes/execute",
          { partner_client_id: client, token, partner_order_ref: r },
          ["400/4008"],
          { ref: r, client },
        );
      }
      default:
        return pr("A's client record", "GET", `/v1/partner/clients/${other}/`, undefined, ["400/2008"]);
    }
  }

  async step(): Promise<void> {
    const weights: [number, () => Promise<unknown>][] = [
      [18, () => this.deposit()],
      [12, () => this.withdrawal()],
      [16, () => this.trade()],
      [4, () => this.race()],
      [5, () => this.replaySame()],
      [5, () => this.replayOther()],
      [10, () => this.readBalances()],
      [8, () => this.readOrder()],
      [5, () => this.listOrders()],
      [6, () => this.invalid()],
      [6, () => this.partnerB()],
      [4, () => this.probe()],
    ];
    let r = this.rng.int(weights.reduce((s, [w]) => s + w, 0));
    for (const [w, fn] of weights) {
      if (r < w) {
        await fn();
        return;
      }
      r -= w;
    }
  }
}

const usedByB = new Set<string>();

// ---------------------------------------------------------------------------------------------
// Faults

async function runSchedule(
  cluster: PgCluster,
  dbName: string,
  schedule: ScheduledFault[],
  faults: FaultRecord[],
) {
  let from = now();
  for (const f of schedule) {
    const at = from + f.afterMs;
    while (now() < at) {
      if (stopping) return;
      await sleep(Math.min(200, at - now()));
    }
    const rec: FaultRecord = { kind: f.kind, injectedMs: now(), healedMs: null };
    faults.push(rec);
    try {
      if (f.kind === "kill") {
        const p = apis[f.process!]!;
        rec.process = p.index;
        // A process that exited on its own is restarted by its watcher; wait for it.
        for (let i = 0; i < 100 && !p.up; i++) await sleep(100);
        rec.injectedMs = now();
        await killApi(p);
        await sleep(f.restartDelayMs);
        await startApi(p);
      } else if (f.kind === "pg_restart") {
        await cluster.crashRestart();
      } else {
        rec.detail = `${await cluster.terminateBackends(dbName)} backends`;
      }
      rec.healedMs = now();
      from = rec.healedMs;
    } catch (err) {
      log(`!! fault ${f.kind} failed: ${String(err).slice(0, 500)}`);
      from = now();
    }
    log(
      `fault ${faults.length}: ${f.kind}${rec.process === undefined ? "" : ` process ${rec.process}`}${rec.detail ? ` (${rec.detail})` : ""} at ${(rec.injectedMs / 1000).toFixed(1)} s, healed at ${rec.healedMs === null ? "never" : `${(rec.healedMs / 1000).toFixed(1)} s`}; ${ops.length} operations so far`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Final read through the API

async function finalCall(partner: PartnerName, target: string): Promise<Outcome> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const op = await call(null, {
      partner,
      kind: "read_balances",
      label: "final read",
      method: "GET",
      target,
    });
    ops.pop();
    if (op.outcome.type === "answer") return op.outcome;
    await sleep(500);
  }
  throw new Error(`final read ${target}: no answer`);
}

/** Every item of a paginated list, and the `total` its last page answered. */
async function readAll<T>(partner: PartnerName, path: string): Promise<{ items: T[]; total: number }> {
  const out: T[] = [];
  let total = 0;
  // Pages are read until a short one: the total is judged, never trusted to stop the reading.
  for (let page = 1; page <= 10_000; page++) {
    const o = await finalCall(partner, `${path}${path.includes("?") ? "&" : "?"}page=${page}&page_size=100`);
    if (o.type !== "answer" || o.status !== 200)
      throw new Error(`${path} page ${page}: ${JSON.stringify(o).slice(0, 300)}`);
    const b = o.body as { items: T[]; total: number };
    out.push(...b.items);
    total = b.total;
    if (b.items.length < 100) break;
  }
  return { items: out, total };
}

async function readFinal(partner: PartnerName, expectedClients: string[]): Promise<PartnerFinal> {
  const listedClients = (
    await readAll<{ partner_client_id: string }>(partner, "/v1/partner/clients")
  ).items.map((c) => c.partner_client_id);
  const balances: Record<string, Record<string, Balance>> = {};
  for (const client of expectedClients) {
    const o = await finalCall(partner, `/v1/partner/balances?partner_client_id=${client}`);
    if (o.type !== "answer" || o.status !== 200)
      throw new Error(`balances of ${client}: ${JSON.stringify(o)}`);
    const items = (o.body as { items: { asset_id: string; balance: string; available_balance: string }[] })
      .items;
    balances[client] = Object.fromEntries(
      items.map((i) => [i.asset_id, { balance: i.balance, available: i.available_balance }]),
    );
  }
  const { items: orders, total } = await readAll<Order>(partner, "/v1/partner/orders");
  const byClient: Record<string, number> = {};
  for (const client of expectedClients) {
    const o = await finalCall(partner, `/v1/partner/orders?partner_client_id=${client}&page_size=1`);
    if (o.type !== "answer" || o.status !== 200) throw new Error(`orders of ${client}: ${JSON.stringify(o)}`);
    byClient[client] = (o.body as { total: number }).total;
  }
  const byFilter: Record<string, number> = {};
  for (const filter of orderTotalFilters) {
    const o = await finalCall(partner, `/v1/partner/orders?${filter}&page_size=1`);
    if (o.type !== "answer" || o.status !== 200) throw new Error(`orders ?${filter}: ${JSON.stringify(o)}`);
    byFilter[filter] = (o.body as { total: number }).total;
  }
  const refLookups: Record<string, Order | null> = {};
  const unknownRefs = new Set(
    ops
      .filter(
        (op) => op.partner === partner && op.outcome.type === "indeterminate" && typeof op.ref === "string",
      )
      .map((op) => op.ref as string),
  );
  for (const ref of unknownRefs) {
    const o = await finalCall(partner, `/v1/partner/orders/ref/${encodeURIComponent(ref)}`);
    refLookups[ref] = o.type === "answer" && o.status === 200 ? resultOrder(o) : null;
    if (o.type === "answer" && o.status !== 200 && o.status !== 404)
      throw new Error(`lookup of ${ref}: ${o.status}`);
  }
  return {
    expectedClients,
    listedClients,
    balances,
    orders,
    orderTotals: { all: total, byClient, byFilter },
    refLookups,
  };
}

// ---------------------------------------------------------------------------------------------
// Printing

function table(title: string, rows: string[][]): void {
  log(`\n${title}`);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  for (const r of rows)
    log(`  ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")}`);
}

function printFigures(history: History, report: ReturnType<typeof checkHistory>, durationMs: number): number {
  const byLabel = new Map<string, Map<string, number>>();
  for (const op of history.ops) {
    const m = byLabel.get(op.label) ?? new Map<string, number>();
    const k = answerKey(op.outcome);
    const status = k === "200" && resultOrder(op.outcome)?.status === "rejected" ? "200 rejected" : k;
    m.set(status, (m.get(status) ?? 0) + 1);
    byLabel.set(op.label, m);
  }
  const rows = [["operation", "total", "outcomes"]];
  for (const [label, m] of [...byLabel].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const total = [...m.values()].reduce((s, v) => s + v, 0);
    rows.push([
      label,
      String(total),
      [...m]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => `${k}: ${v}`)
        .join(", "),
    ]);
  }
  const indeterminate = history.ops.filter((op) => op.outcome.type === "indeterminate").length;
  rows.push(["all", String(history.ops.length), `${indeterminate} indeterminate`]);
  table(`Operations (${history.ops.length} by ${history.facts.workers} workers)`, rows);

  const serverErrors = new Map<number, { n: number; sample: string }>();
  for (const op of history.ops) {
    if (op.outcome.type !== "indeterminate" || op.outcome.status === undefined) continue;
    const e = serverErrors.get(op.outcome.status) ?? { n: 0, sample: op.outcome.detail ?? "" };
    e.n++;
    serverErrors.set(op.outcome.status, e);
  }
  for (const [status, e] of serverErrors) log(`  ${status} answers: ${e.n}, e.g. ${e.sample}`);
  const r = report.resolution;
  log(
    `  references of indeterminate writes looked up afterwards: ${r.committed} committed, ${r.notCommitted} not; ` +
      `${r.committedAfterOnly5xx} committed although every answer for them was a 5xx`,
  );

  const faultRows = [["fault", "count", "healed"]];
  for (const kind of ["kill", "pg_restart", "terminate"] as FaultKind[]) {
    const fs = history.facts.faults.filter((f) => f.kind === kind);
    faultRows.push([kind, String(fs.length), String(fs.filter((f) => f.healedMs !== null).length)]);
  }
  faultRows.push(["unexpected process exits", String(history.facts.unexpectedExits.length), ""]);
  table("Faults injected", faultRows);

  const recRows = [
    [
      "fault",
      "healed at",
      "0-10 s answered",
      "after 10 s answered",
      "last failure after heal",
      "failures after heal",
    ],
  ];
  for (const r of report.recovery) {
    recRows.push([
      r.fault,
      r.healedMs === null ? "never" : `${(r.healedMs / 1000).toFixed(1)} s`,
      `${r.early.answered}/${r.early.total}`,
      `${r.judged.answered}/${r.judged.total}${r.judged.total > 0 ? ` (${((100 * r.judged.answered) / r.judged.total).toFixed(2)} %)` : ""}`,
      `${(r.lastFailureAfterHealMs / 1000).toFixed(2)} s`,
      Object.entries(r.failures)
        .map(([k, v]) => `${k}: ${v}`)
        .join(", "),
    ]);
  }
  table("Recovery per fault", recRows);

  let passed = 0;
  let failed = 0;
  log("\nInvariants");
  for (const i of report.invariants) {
    const ok = i.violations.length === 0;
    if (ok) passed++;
    else failed++;
    log(
      `  ${ok ? "PASS" : "FAIL"}  ${i.name}: ${i.checked} checked${ok ? "" : `, ${i.violations.length} violation(s)`}`,
    );
    for (const v of i.violations) log(`          ${v}`);
  }
  log(`\nFAULT_SEED=${history.facts.seed}; ${(durationMs / 1000).toFixed(1)} s in all`);
  log(`${passed} passed, ${failed} failed`);
  return failed;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  if (!canStartCluster()) {
    log("test:faults: no PostgreSQL server binaries on this machine (set PG_BIN)");
    log("0 passed, 1 failed");
    return 1;
  }
  log(
    `test:faults: FAULT_SEED=${seed} (set FAULT_SEED=${seed} to replay this schedule), ${workerCount} workers, at least ${minOperations} operations`,
  );
  const watchdog = setTimeout(() => {
    log(`test:faults: over ${wholeRunMaxMs / 1000} s; giving up`);
    stopping = true;
    process.exitCode = 1;
    cleanup().finally(() => process.exit(1));
  }, wholeRunMaxMs);
  watchdog.unref();
  let cluster: PgCluster | null = null;
  const cleanup = async () => {
    stopping = true;
    shuttingDown = true;
    await Promise.all(apis.map((p) => p.starting?.catch(() => {})));
    await Promise.all(
      apis.map(async (p) => {
        p.expectedExit = true;
        const s = p.service;
        if (s !== null && s.child.exitCode === null && s.child.signalCode === null)
          await s.stop().catch(() => {});
      }),
    );
    for (const p of apis) fs.rmSync(p.dataDir, { recursive: true, force: true });
    for (const a of agents.values()) a.destroy();
    await cluster?.destroy().catch(() => {});
  };
  try {
    cluster = await startPgCluster({ settings: { max_connections: "100", fsync: "on" } });
    const dbName = "bank";
    databaseUrl = await cluster.createDatabase(dbName);
    for (let i = 0; i < processCount; i++) {
      apis.push({
        index: i,
        dataDir: tempDataDir(),
        service: null,
        up: false,
        expectedExit: false,
        starts: 0,
        starting: null,
      });
    }
    // The first migrates and seeds; the others find it done.
    await startApi(apis[0]!);
    await Promise.all(apis.slice(1).map((p) => startApi(p)));
    log(
      `test:faults: PostgreSQL on port ${cluster.port}, ${processCount} API processes up at ${(now() / 1000).toFixed(1)} s`,
    );

    for (const name of ["A", "B"] as PartnerName[]) {
      const keys = generateKeyPair();
      const res = await admin("POST", "/admin/partners", {
        name: `Bank Partner ${name}`,
        public_key_pem: keys.publicKeyPem,
        allowed_ips: ["127.0.0.1/32", "::1/128"],
      });
      if (res.status !== 201) throw new Error(`partner ${name}: ${res.status} ${JSON.stringify(res.body)}`);
      partnerOf[name] = {
        name,
        id: (res.body as { result: { id: string } }).result.id,
        key: createPrivateKey(keys.privateKeyPem),
      };
      // The bank checks money under faults, not rate limits: budgets far above its load.
      const budgets = await admin("PUT", `/admin/partners/${partnerOf[name]!.id}/limits`, {
        reads: 10_000_000,
        writes: 10_000_000,
        quotes: 10_000_000,
      });
      if (budgets.status !== 200) throw new Error(`partner ${name} limits: ${budgets.status}`);
    }
    for (const [pair, price] of Object.entries(prices)) {
      const res = await admin("PUT", `/admin/pairs/${pair}/price`, { ...price, reason: "fault bank set-up" });
      if (res.status !== 200) throw new Error(`price ${pair}: ${res.status} ${JSON.stringify(res.body)}`);
    }
    const setupRng = mulberry32(seed);
    const create = async (partner: PartnerName, n: number, id: string) => {
      const op = await call(setupRng, {
        partner,
        kind: "invalid",
        label: "setup: create client",
        method: "POST",
        target: "/v1/partner/clients",
        body: clientPayload(n, { partner_client_id: id }),
        meta: { expect: ["201"] },
      });
      if (answerKey(op.outcome) !== "201")
        throw new Error(`client ${partner} ${id}: ${JSON.stringify(op.outcome)}`);
    };
    for (const [i, id] of idsA.entries()) await create("A", i + 1, id);
    for (const [i, id] of idsB.entries()) await create("B", 1_000 + i, id);
    const setup = new Worker(999);
    for (const id of idsA) {
      await setup.funding("A", "deposit", "setup deposit", id, "AED", "5000.00", setup.ref("s"));
      await setup.funding("A", "deposit", "setup deposit", id, "USD", "1500.00", setup.ref("s"));
    }
    for (const id of idsB)
      await setup.funding("B", "deposit", "setup deposit", id, "AED", "2000.00", setup.ref("sb"));
    log(
      `test:faults: partners, ${clientsA} + ${clientsB} clients and their funding ready at ${(now() / 1000).toFixed(1)} s`,
    );

    const schedule = scheduleFaults(mulberry32(seed ^ 0x5eed), {
      processes: processCount,
      counts: scheduledFaults,
      firstAfterMs: 8_000,
    });
    log(
      `test:faults: schedule (pause, then fault) ${schedule.map((f) => `${(f.afterMs / 1000).toFixed(1)}s ${f.kind}${f.process === undefined ? "" : ` #${f.process}`}`).join(", ")}`,
    );
    const faults: FaultRecord[] = [];
    const trafficStart = now();
    let scheduleDone = false;
    const faultLoop = runSchedule(cluster, dbName, schedule, faults).finally(() => (scheduleDone = true));
    const lastHeal = () => Math.max(0, ...faults.map((f) => f.healedMs ?? 0));
    const enough = () =>
      stopping ||
      now() - trafficStart > trafficMaxMs ||
      (scheduleDone && ops.length >= minOperations && now() > lastHeal() + recoveryAfterMs + 8_000);
    const workers = Array.from({ length: workerCount }, (_, i) => new Worker(i));
    const harnessErrors: string[] = [];
    await Promise.all(
      workers.map(async (w) => {
        while (!enough()) {
          try {
            await w.step();
          } catch (err) {
            harnessErrors.push(`worker ${w.index}: ${String(err).slice(0, 300)}`);
            if (harnessErrors.length <= 5) log(`!! ${harnessErrors.at(-1)}`);
            await sleep(100);
          }
        }
      }),
    );
    stopping = true;
    await faultLoop;
    log(
      `test:faults: traffic over at ${(now() / 1000).toFixed(1)} s: ${ops.length} operations; reading the final state`,
    );

    // Every process up again before the final read.
    for (const p of apis) if (!p.up) await startApi(p);
    // B looks for a sample of A's orders by id at the end too.
    const probeRng = mulberry32(seed ^ 0xb0b);
    for (let i = 0; i < 50 && ackedA.length > 0; i++) {
      const a = pick(probeRng, ackedA);
      await call(probeRng, {
        partner: "B",
        kind: "probe",
        label: "B probe: A's order by id (final)",
        method: "GET",
        target: `/v1/partner/orders/${a.order.id}`,
        meta: { expect: ["404"] },
      });
    }
    const final = { A: await readFinal("A", idsA), B: await readFinal("B", idsB) };
    const ledger = await admin("GET", "/admin/ledger/check");
    const ledgerOk =
      ledger.status === 200 && (ledger.body as { result?: { ok?: unknown } }).result?.ok === true;

    const history: History = {
      ops: ops.filter((op) => op.label !== "setup: create client"),
      final,
      facts: {
        seed,
        workers: workerCount,
        required: { operations: minOperations, workers: 32, faults: requiredFaults },
        faults,
        unexpectedExits,
        harnessErrors,
        ledgerCheckOk: ledgerOk,
        recovery: { afterMs: recoveryAfterMs, rate: 0.99 },
      },
    };
    const report = checkHistory(history);
    const failed = printFigures(history, report, now());
    return failed > 0 ? 1 : 0;
  } finally {
    clearTimeout(watchdog);
    await cleanup();
  }
}

process.exitCode = await main().catch((err: unknown) => {
  log(`test:faults: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  log("0 passed, 1 failed");
  return 1;
});
