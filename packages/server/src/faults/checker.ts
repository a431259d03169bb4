// The bank test's checker: judges a recorded history and the final state read through the partner
// API against the contract's money invariants. Pure (no I/O), so hand-made histories test it.
// Amounts are summed as bigints at scale 8 (protocol money), never as JS numbers.

import { formatDecimal, parseDecimal } from "@counterpart/protocol";
import {
  answerKey,
  type FaultKind,
  type History,
  type Op,
  type Order,
  orderTotalFilters,
  type PartnerFinal,
  type PartnerName,
  resultOrder,
} from "./history.ts";

export interface InvariantResult {
  name: string;
  /** How many things were checked. */
  checked: number;
  violations: string[];
}

export interface RecoveryFigure {
  fault: string;
  healedMs: number | null;
  /** Operations invoked in the first window after the heal, and how many got an answer. */
  early: { total: number; answered: number };
  /** Operations invoked from `afterMs` after the heal to the next fault, and how many got an answer. */
  judged: { total: number; answered: number };
  /** From the heal to the invocation of the last operation that got no answer (0: none failed). */
  lastFailureAfterHealMs: number;
  /** The operations after the heal that got no answer, by how they ended ("?reset", "?5xx", …). */
  failures: Record<string, number>;
}

export interface CheckReport {
  invariants: InvariantResult[];
  recovery: RecoveryFigure[];
  /** Indeterminate writes resolved afterwards: committed or not, and how many of the committed ones had only 5xx answers. */
  resolution: { committed: number; notCommitted: number; committedAfterOnly5xx: number };
}

const partners: readonly PartnerName[] = ["A", "B"];
const writeKinds = new Set(["deposit", "withdrawal", "execute", "invalid", "probe"]);
const violationsShownMax = 20;

function money(text: unknown): bigint | null {
  return typeof text === "string" ? parseDecimal(text) : null;
}

/** The changes an order makes to its client's balances, per asset (completed orders only). */
export function orderEffects(o: Order): Map<string, bigint> {
  const out = new Map<string, bigint>();
  if (o.status !== "completed") return out;
  const add = (asset: string | null, v: bigint | null) => {
    if (asset === null || v === null) throw new Error(`order ${o.id}: missing amount or asset`);
    out.set(asset, (out.get(asset) ?? 0n) + v);
  };
  const debit = money(o.debit);
  const credit = money(o.credit);
  switch (o.type) {
    case "deposit":
      add(o.debit_asset_id, debit);
      break;
    case "withdrawal":
      add(o.credit_asset_id, credit === null ? null : -credit);
      break;
    case "buy":
      add(o.debit_asset_id, debit);
      add(o.credit_asset_id, credit === null ? null : -credit);
      break;
    case "sell":
      add(o.credit_asset_id, credit === null ? null : -credit);
      add(o.debit_asset_id, debit);
      break;
    default:
      throw new Error(`order ${o.id}: unknown type ${o.type}`);
  }
  if (o.type === "buy" || o.type === "sell") {
    const fee = money(o.fee);
    const vat = money(o.vat);
    add(o.fee_asset_id, fee === null || vat === null ? null : -(fee + vat));
  }
  return out;
}

/** Field-by-field differences between two orders ("status: completed → rejected"). */
export function orderDifferences(a: Order, b: Order): string[] {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  const out: string[] = [];
  for (const k of keys) {
    const x = (a as unknown as Record<string, unknown>)[k];
    const y = (b as unknown as Record<string, unknown>)[k];
    if (JSON.stringify(x) !== JSON.stringify(y))
      out.push(`${k}: ${JSON.stringify(x)} → ${JSON.stringify(y)}`);
  }
  return out;
}

/** The trade an order is, as the fingerprint of the quote it came from. */
function tradeKey(
  partner: PartnerName,
  client: string,
  side: string,
  baseAsset: string | null,
  base: bigint,
) {
  return `${partner}|${client}|${side}|${baseAsset}|${base}`;
}

function orderTradeKey(partner: PartnerName, o: Order): string | null {
  if (o.type === "buy")
    return tradeKey(partner, o.partner_client_id, "buy", o.debit_asset_id, money(o.debit) ?? -1n);
  if (o.type === "sell") {
    return tradeKey(partner, o.partner_client_id, "sell", o.credit_asset_id, money(o.credit) ?? -1n);
  }
  return null;
}

function quoteTradeKey(op: Op): string | null {
  if (op.quote === undefined || op.client === undefined) return null;
  const base = money(op.quote.baseAmount);
  if (base === null) return null;
  return tradeKey(op.partner, op.client, op.quote.side, op.quote.pair.split("-")[0] ?? null, base);
}

class Invariant {
  readonly name: string;
  checked = 0;
  readonly violations: string[] = [];
  #more = 0;
  constructor(name: string) {
    this.name = name;
  }
  check(ok: boolean, what: () => string): void {
    this.checked++;
    if (!ok) this.fail(what());
  }
  fail(what: string): void {
    if (this.violations.length < violationsShownMax) this.violations.push(what);
    else this.#more++;
  }
  result(): InvariantResult {
    const violations = this.#more > 0 ? [...this.violations, `… and ${this.#more} more`] : this.violations;
    return { name: this.name, checked: this.checked, violations };
  }
  get failed(): number {
    return this.violations.length + this.#more;
  }
}

const isIndeterminate = (op: Op) => op.outcome.type === "indeterminate";
const key = (op: Op) => answerKey(op.outcome);
const describe = (op: Op) =>
  `op ${op.id} (${op.partner} ${op.label}${op.ref ? ` ref ${op.ref}` : ""}${op.client ? ` ${op.client}` : ""}) → ${key(op)}`;

function addTo(target: Map<string, bigint>, effects: Map<string, bigint>): void {
  for (const [asset, v] of effects) target.set(asset, (target.get(asset) ?? 0n) + v);
}

/** Judges a history. Every invariant is reported with what it checked and its violations. */
export function checkHistory(h: History): CheckReport {
  const inv = {
    exits: new Invariant("processes never exit"),
    run: new Invariant("the run did what it claims (operations, workers, faults)"),
    answers: new Invariant("every answer is one the contract allows"),
    resolved: new Invariant("every indeterminate operation resolved by looking it up"),
    conservation: new Invariant("conservation per asset (clients' balances = completed orders)"),
    perClient: new Invariant("each client's balance equals the sum of its orders"),
    negative: new Invariant("no negative balance ever read"),
    oneRef: new Invariant("exactly one order per partner_order_ref"),
    reuse: new Invariant("2020 on every reuse of a reference"),
    failedNoOrder: new Invariant("a failed request creates no order"),
    token: new Invariant("one order per quote token"),
    durable: new Invariant("every acknowledged order durable and unchanged"),
    phantom: new Invariant("every order comes from a request"),
    isolation: new Invariant("isolation between partners"),
    totals: new Invariant(
      "an orders list's total is the number of orders it lists (partner, each client, by status and source)",
    ),
    recovery: new Invariant(
      `≥ ${(h.facts.recovery.rate * 100).toFixed(0)} % answered from ${h.facts.recovery.afterMs / 1000} s after each fault heals`,
    ),
    ledger: new Invariant("ledger check (admin API, extra cross-check)"),
  };

  // --- processes and the run itself
  inv.exits.checked = 3;
  for (const e of h.facts.unexpectedExits) {
    inv.exits.fail(
      `API process ${e.process} exited on its own at ${(e.atMs / 1000).toFixed(1)} s (code ${e.code}, signal ${e.signal}): ${e.tail}`,
    );
  }
  const runOps = h.ops.length;
  inv.run.check(
    runOps >= h.facts.required.operations,
    () => `${runOps} operations, ${h.facts.required.operations} required`,
  );
  inv.run.check(h.facts.workers >= h.facts.required.workers, () => `${h.facts.workers} workers`);
  for (const [kind, n] of Object.entries(h.facts.required.faults) as [FaultKind, number][]) {
    const done = h.facts.faults.filter((f) => f.kind === kind && f.healedMs !== null).length;
    inv.run.check(done >= n, () => `${done} ${kind} faults carried out and healed, ${n} required`);
  }
  inv.run.check(
    h.facts.harnessErrors.length === 0,
    () => `harness errors: ${h.facts.harnessErrors.join("; ")}`,
  );
  for (const f of h.facts.faults) {
    inv.run.check(f.healedMs !== null, () => `fault ${f.kind} at ${f.injectedMs} ms never healed`);
  }
  if (h.facts.ledgerCheckOk !== null) {
    inv.ledger.check(h.facts.ledgerCheckOk, () => "GET /admin/ledger/check found differences");
  }

  // --- indexes
  const finalById: Record<PartnerName, Map<number, Order>> = { A: new Map(), B: new Map() };
  const finalByRef: Record<PartnerName, Map<string, Order[]>> = { A: new Map(), B: new Map() };
  const finalByTrade = new Map<string, Order[]>();
  for (const p of partners) {
    for (const o of h.final[p].orders) {
      if (finalById[p].has(o.id)) inv.oneRef.fail(`${p}: order ${o.id} listed twice`);
      finalById[p].set(o.id, o);
      if (o.partner_order_ref !== null) {
        const list = finalByRef[p].get(o.partner_order_ref) ?? [];
        list.push(o);
        finalByRef[p].set(o.partner_order_ref, list);
      }
      const tk = orderTradeKey(p, o);
      if (tk !== null) finalByTrade.set(tk, [...(finalByTrade.get(tk) ?? []), o]);
    }
  }
  const opsById = new Map(h.ops.map((op) => [op.id, op]));
  /** Acknowledged orders: id → the order the creation answered, and when. */
  const acked: Record<PartnerName, Map<number, { order: Order; op: Op }>> = { A: new Map(), B: new Map() };
  const ackedRefAt: Record<PartnerName, Map<string, { order: Order; endedMs: number }>> = {
    A: new Map(),
    B: new Map(),
  };
  for (const op of h.ops) {
    if (op.kind !== "deposit" && op.kind !== "withdrawal" && op.kind !== "execute") continue;
    const o = resultOrder(op.outcome);
    if (o === null) continue;
    acked[op.partner].set(o.id, { order: o, op });
    if (o.partner_order_ref !== null)
      ackedRefAt[op.partner].set(o.partner_order_ref, { order: o, endedMs: op.endedMs });
  }

  // --- answers
  for (const op of h.ops) {
    if (op.kind === "probe") continue;
    if (isIndeterminate(op)) continue;
    const k = key(op);
    const o = resultOrder(op.outcome);
    const body = op.outcome.type === "answer" ? op.outcome.body : null;
    const allowed = (() => {
      switch (op.kind) {
        case "deposit":
        case "withdrawal": {
          if (k === "409/2020") return (body as { msg_detail?: unknown } | null)?.msg_detail === null;
          if (op.kind === "withdrawal" && k === "400/3005") return true;
          if (o === null) return false;
          const amountField = op.kind === "deposit" ? o.debit : o.credit;
          const assetField = op.kind === "deposit" ? o.debit_asset_id : o.credit_asset_id;
          return (
            o.type === op.kind &&
            o.status === "completed" &&
            o.partner_order_ref === op.ref &&
            o.partner_client_id === op.client &&
            assetField === op.asset &&
            money(amountField) !== null &&
            money(amountField) === money(op.amount)
          );
        }
        case "quote": {
          if (k === "400/3005") return true;
          const token = (body as { result?: { token?: unknown } } | null)?.result?.token;
          return k === "200" && typeof token === "string";
        }
        case "execute": {
          if (k === "409/2020" || k === "400/4008") return true;
          return (
            o !== null &&
            (o.type === "buy" || o.type === "sell") &&
            (o.status === "completed" || o.status === "rejected") &&
            o.partner_order_ref === (op.ref ?? null) &&
            o.partner_client_id === op.client
          );
        }
        case "read_balances":
          return k === "200" && Array.isArray((body as { items?: unknown } | null)?.items);
        case "read_order":
          return (
            o !== null &&
            (op.target?.id === undefined || o.id === op.target.id) &&
            (op.target?.ref === undefined || o.partner_order_ref === op.target.ref)
          );
        case "list_orders": {
          const b = body as { items?: unknown; total?: unknown } | null;
          return k === "200" && Array.isArray(b?.items) && typeof b?.total === "number";
        }
        case "invalid":
          return (op.expect ?? []).includes(k);
      }
    })();
    inv.answers.check(
      allowed,
      () => `${describe(op)}${op.expect ? `, expected ${op.expect.join(" or ")}` : ""}`,
    );
  }

  // --- balances never negative, in every read and at the end
  const nonNegative = (where: string, b: unknown, a: unknown) => {
    const bv = money(b);
    const av = money(a);
    inv.negative.check(
      bv !== null && av !== null && bv >= 0n && av >= 0n,
      () => `${where}: balance ${b}, available ${a}`,
    );
  };
  for (const op of h.ops) {
    if (op.kind !== "read_balances" || op.outcome.type !== "answer" || op.outcome.status !== 200) continue;
    const items = (op.outcome.body as { items?: unknown } | null)?.items;
    if (!Array.isArray(items)) continue;
    for (const it of items as { asset_id?: string; balance?: unknown; available_balance?: unknown }[]) {
      nonNegative(`${describe(op)} ${it.asset_id}`, it.balance, it.available_balance);
    }
  }
  for (const p of partners) {
    for (const [client, assets] of Object.entries(h.final[p].balances)) {
      for (const [asset, b] of Object.entries(assets))
        nonNegative(`final ${p} ${client} ${asset}`, b.balance, b.available);
    }
  }

  // --- references: one order each, 2020 on reuse, failed requests leave none, lookups resolve
  /** The orders the history accounts for, per partner: acknowledged or resolved afterwards. */
  const historyOrders: Record<PartnerName, Map<number, Order>> = { A: new Map(), B: new Map() };
  for (const p of partners) for (const [id, a] of acked[p]) historyOrders[p].set(id, a.order);
  const refGroups: Record<PartnerName, Map<string, Op[]>> = { A: new Map(), B: new Map() };
  const resolution = { committed: 0, notCommitted: 0, committedAfterOnly5xx: 0 };
  for (const op of h.ops) {
    if (!writeKinds.has(op.kind) || typeof op.ref !== "string") continue;
    const g = refGroups[op.partner].get(op.ref) ?? [];
    g.push(op);
    refGroups[op.partner].set(op.ref, g);
  }
  for (const p of partners) {
    for (const [ref, list] of finalByRef[p]) {
      inv.oneRef.check(
        list.length === 1,
        () => `${p}: ${list.length} orders with ref ${ref}: ids ${list.map((o) => o.id).join(", ")}`,
      );
    }
    for (const [ref, group] of refGroups[p]) {
      group.sort((a, b) => a.invokedMs - b.invokedMs);
      const finals = finalByRef[p].get(ref) ?? [];
      const successes = group.filter((op) => resultOrder(op.outcome) !== null);
      const dup = group.filter((op) => key(op) === "409/2020");
      const unknown = group.filter(isIndeterminate);
      inv.oneRef.check(
        successes.length <= 1,
        () => `${p}: ref ${ref} created ${successes.length} times: ${successes.map(describe).join("; ")}`,
      );
      if (successes.length === 1) {
        const o = resultOrder(successes[0]!.outcome)!;
        inv.oneRef.check(
          finals.length === 1 && finals[0]!.id === o.id,
          () =>
            `${p}: ref ${ref} acknowledged as order ${o.id}, the final state has ${finals.map((f) => f.id).join(", ") || "none"}`,
        );
      }
      if (dup.length > 0) {
        inv.reuse.check(finals.length === 1, () => `${p}: ${describe(dup[0]!)} but no order has ref ${ref}`);
      }
      if (successes.length === 0 && dup.length === 0 && unknown.length === 0) {
        inv.failedNoOrder.check(
          finals.length === 0,
          () =>
            `${p}: every request with ref ${ref} failed (${group.map(key).join(", ")}), yet order ${finals[0]?.id} has it`,
        );
      }
      // Once the reference is known to be taken, every later request with it is a 2020.
      const knownAt = Math.min(
        ...group
          .filter((op) => resultOrder(op.outcome) !== null || key(op) === "409/2020")
          .map((op) => op.endedMs),
      );
      for (const op of group) {
        if (op.invokedMs <= knownAt || isIndeterminate(op)) continue;
        inv.reuse.check(key(op) === "409/2020", () => `${describe(op)}: ref taken since ${knownAt} ms`);
      }
      // Indeterminate ends are resolved by looking the reference up afterwards.
      if (unknown.length > 0) {
        const lookups = h.final[p].refLookups;
        if (!(ref in lookups)) {
          inv.resolved.fail(`${p}: ref ${ref} of ${describe(unknown[0]!)} was never looked up`);
          continue;
        }
        const found = lookups[ref] ?? null;
        inv.resolved.check(
          (found === null && finals.length === 0) ||
            (found !== null && finals.length === 1 && orderDifferences(found, finals[0]!).length === 0),
          () =>
            `${p}: lookup of ref ${ref} gave ${found?.id ?? "404"}, the order list ${finals.map((f) => f.id).join(", ") || "none"}`,
        );
        if (found !== null && successes.length === 0) {
          historyOrders[p].set(found.id, found);
          resolution.committed++;
          if (unknown.every((op) => op.outcome.type === "indeterminate" && op.outcome.reason === "5xx")) {
            resolution.committedAfterOnly5xx++;
          }
        } else if (found === null) resolution.notCommitted++;
      }
    }
  }

  // --- one order per quote token (fingerprint: client, side, base asset, unique base amount)
  const quoteKeys = new Map<string, Op>();
  for (const op of h.ops) {
    if (op.kind !== "quote" || key(op) !== "200") continue;
    const qk = quoteTradeKey(op);
    if (qk === null) continue;
    if (quoteKeys.has(qk))
      inv.token.fail(`quotes ${quoteKeys.get(qk)!.id} and ${op.id} share the fingerprint ${qk}`);
    quoteKeys.set(qk, op);
  }
  const executesByQuote = new Map<number, Op[]>();
  for (const op of h.ops) {
    if (op.kind !== "execute" || op.quoteOp === undefined) continue;
    executesByQuote.set(op.quoteOp, [...(executesByQuote.get(op.quoteOp) ?? []), op]);
  }
  for (const [quoteOpId, executes] of executesByQuote) {
    const q = opsById.get(quoteOpId);
    const qk = q === undefined ? null : quoteTradeKey(q);
    if (q === undefined || qk === null) {
      inv.token.fail(`executions of an unknown quote op ${quoteOpId}`);
      continue;
    }
    const wins = executes.filter((op) => resultOrder(op.outcome) !== null);
    const finals = finalByTrade.get(qk) ?? [];
    inv.token.check(
      wins.length <= 1,
      () => `quote op ${quoteOpId}: ${wins.length} executions answered 200: ${wins.map(describe).join("; ")}`,
    );
    inv.token.check(
      finals.length <= 1,
      () => `quote op ${quoteOpId}: ${finals.length} orders: ${finals.map((o) => o.id).join(", ")}`,
    );
    if (wins.length === 1) {
      const o = resultOrder(wins[0]!.outcome)!;
      inv.token.check(
        finals.length === 1 && finals[0]!.id === o.id,
        () =>
          `quote op ${quoteOpId}: execution answered order ${o.id}, final state has ${finals.map((f) => f.id).join(", ") || "none"}`,
      );
    } else if (!executes.some(isIndeterminate)) {
      inv.token.check(
        finals.length === 0,
        () => `quote op ${quoteOpId}: no execution succeeded, yet order ${finals[0]?.id} exists`,
      );
    }
    // An execution without a reference that ended without an answer is resolved by its fingerprint.
    const refless = executes.filter((op) => isIndeterminate(op) && (op.ref ?? null) === null);
    if (refless.length > 0) {
      inv.resolved.checked++;
      const only = finals[0];
      if (only !== undefined && only.partner_order_ref === null && wins.length === 0) {
        historyOrders[q.partner].set(only.id, only);
      }
    }
  }

  // --- every acknowledged order durable and unchanged; reads of it agree
  for (const p of partners) {
    for (const [id, { order, op }] of acked[p]) {
      const f = finalById[p].get(id);
      inv.durable.check(
        f !== undefined,
        () => `${p}: order ${id} acknowledged by ${describe(op)} is missing at the end`,
      );
      if (f !== undefined) {
        const diff = orderDifferences(order, f);
        inv.durable.check(diff.length === 0, () => `${p}: order ${id} changed: ${diff.join("; ")}`);
      }
    }
  }
  for (const op of h.ops) {
    if (op.outcome.type !== "answer") continue;
    const seen: Order[] = [];
    if (op.kind === "read_order") {
      const o = resultOrder(op.outcome);
      if (o !== null) seen.push(o);
      else {
        const known =
          (op.target?.id !== undefined && acked[op.partner].get(op.target.id)) ||
          (op.target?.ref !== undefined && ackedRefAt[op.partner].get(op.target.ref));
        const ackEnd = known ? ("op" in known ? known.op.endedMs : known.endedMs) : Number.POSITIVE_INFINITY;
        inv.durable.check(
          !(op.invokedMs > ackEnd),
          () => `${describe(op)}: the order was acknowledged at ${ackEnd} ms`,
        );
      }
    } else if (op.kind === "list_orders" && op.outcome.status === 200) {
      const items = (op.outcome.body as { items?: unknown } | null)?.items;
      if (Array.isArray(items)) seen.push(...(items as Order[]));
    }
    for (const o of seen) {
      const a = acked[op.partner].get(o.id);
      if (a === undefined || a.op.endedMs >= op.invokedMs) continue;
      const diff = orderDifferences(a.order, o);
      inv.durable.check(
        diff.length === 0,
        () => `${describe(op)}: order ${o.id} read differs: ${diff.join("; ")}`,
      );
    }
  }

  // --- no order without a request
  for (const p of partners) {
    for (const o of h.final[p].orders) {
      inv.phantom.check(
        historyOrders[p].has(o.id),
        () =>
          `${p}: order ${o.id} (${o.type} ${o.partner_order_ref ?? "no ref"} ${o.partner_client_id}) matches no acknowledged or resolved request`,
      );
    }
  }

  // --- conservation per asset (history) and per client (order list)
  for (const p of partners) {
    const fin: PartnerFinal = h.final[p];
    const expected = new Map<string, bigint>();
    const expectedPerClient = new Map<string, Map<string, bigint>>();
    for (const o of historyOrders[p].values()) {
      const e = orderEffects(o);
      addTo(expected, e);
      const m = expectedPerClient.get(o.partner_client_id) ?? new Map<string, bigint>();
      addTo(m, e);
      expectedPerClient.set(o.partner_client_id, m);
    }
    const actual = new Map<string, bigint>();
    const fromList = new Map<string, Map<string, bigint>>();
    for (const o of fin.orders) {
      const m = fromList.get(o.partner_client_id) ?? new Map<string, bigint>();
      addTo(m, orderEffects(o));
      fromList.set(o.partner_client_id, m);
    }
    for (const client of fin.expectedClients) {
      const balances = fin.balances[client];
      if (balances === undefined) {
        inv.conservation.fail(`${p}: no final balances for ${client}`);
        continue;
      }
      const assets = new Set([...Object.keys(balances), ...(fromList.get(client)?.keys() ?? [])]);
      for (const asset of assets) {
        const have = money(balances[asset]?.balance) ?? 0n;
        actual.set(asset, (actual.get(asset) ?? 0n) + have);
        const want = fromList.get(client)?.get(asset) ?? 0n;
        inv.perClient.check(
          have === want,
          () =>
            `${p} ${client} ${asset}: balance ${formatDecimal(have)}, its orders sum to ${formatDecimal(want)}`,
        );
        if (p === "B" || (p === "A" && h.final.B.expectedClients.includes(client))) {
          // Partner B's clients share ids with some of A's: B's balances follow B's own history only.
          const fromHistory = expectedPerClient.get(client)?.get(asset) ?? 0n;
          inv.isolation.check(
            have === fromHistory,
            () =>
              `${p} ${client} ${asset}: balance ${formatDecimal(have)}, ${p}'s own history makes ${formatDecimal(fromHistory)}`,
          );
        }
      }
    }
    const assets = new Set([...expected.keys(), ...actual.keys()]);
    for (const asset of assets) {
      const want = expected.get(asset) ?? 0n;
      const have = actual.get(asset) ?? 0n;
      inv.conservation.check(
        want === have,
        () =>
          `${p} ${asset}: clients hold ${formatDecimal(have)}, completed orders make ${formatDecimal(want)}`,
      );
    }
  }

  // --- isolation: probes, and each partner's final view holds only its own
  for (const op of h.ops) {
    if (op.kind !== "probe") continue;
    if (isIndeterminate(op)) continue;
    const k = key(op);
    const body =
      op.outcome.type === "answer" ? (op.outcome.body as { items?: unknown[]; total?: unknown }) : null;
    const emptyList =
      k === "200" && Array.isArray(body?.items) && body.items.length === 0 && body.total === 0;
    const ok = (op.expect ?? []).includes(k) || ((op.expect ?? []).includes("200-empty") && emptyList);
    inv.isolation.check(ok, () => `${describe(op)}, expected ${(op.expect ?? []).join(" or ")}`);
  }
  for (const p of partners) {
    const other: PartnerName = p === "A" ? "B" : "A";
    const fin = h.final[p];
    const listed = new Set(fin.listedClients);
    inv.isolation.check(
      listed.size === fin.expectedClients.length && fin.expectedClients.every((c) => listed.has(c)),
      () => `${p} lists clients ${[...listed].join(", ")}, created ${fin.expectedClients.join(", ")}`,
    );
    for (const o of fin.orders) {
      inv.isolation.check(!finalById[other].has(o.id), () => `order ${o.id} appears in both partners' lists`);
      inv.isolation.check(
        fin.expectedClients.includes(o.partner_client_id),
        () => `${p} lists order ${o.id} of client ${o.partner_client_id}, not its own`,
      );
    }
  }

  // --- the orders list's totals
  for (const p of partners) {
    const fin = h.final[p];
    inv.totals.check(
      fin.orderTotals.all === fin.orders.length,
      () => `${p}: total ${fin.orderTotals.all}, ${fin.orders.length} orders listed`,
    );
    for (const client of fin.expectedClients) {
      const listed = fin.orders.filter((o) => o.partner_client_id === client).length;
      const total = fin.orderTotals.byClient[client];
      inv.totals.check(total === listed, () => `${p} ${client}: total ${total}, ${listed} orders listed`);
    }
    for (const filter of orderTotalFilters) {
      const params = new URLSearchParams(filter);
      const sources = params.getAll("source");
      const statuses = params.getAll("status");
      const listed = fin.orders.filter(
        (o) =>
          (sources.length === 0 || sources.includes(o.source)) &&
          (statuses.length === 0 || statuses.includes(o.status)),
      ).length;
      const total = fin.orderTotals.byFilter[filter];
      inv.totals.check(
        total === listed,
        () => `${p} ?${filter}: total ${total}, ${listed} such orders listed`,
      );
    }
  }

  // --- recovery after each fault
  const recovery: RecoveryFigure[] = [];
  const faults = [...h.facts.faults].sort((a, b) => a.injectedMs - b.injectedMs);
  faults.forEach((f, i) => {
    const name = `${f.kind}${f.process === undefined ? "" : ` process ${f.process}`} at ${(f.injectedMs / 1000).toFixed(1)} s`;
    if (f.healedMs === null) {
      recovery.push({
        fault: name,
        healedMs: null,
        early: { total: 0, answered: 0 },
        judged: { total: 0, answered: 0 },
        lastFailureAfterHealMs: 0,
        failures: {},
      });
      return;
    }
    const healed = f.healedMs;
    // An operation still under way when the next fault strikes is that fault's, not this one's.
    const end = faults[i + 1]?.injectedMs ?? Number.POSITIVE_INFINITY;
    const judgedFrom = healed + h.facts.recovery.afterMs;
    const early = { total: 0, answered: 0 };
    const judged = { total: 0, answered: 0 };
    let lastFailure = 0;
    const failures: Record<string, number> = {};
    for (const op of h.ops) {
      if (op.invokedMs < healed || op.endedMs >= end) continue;
      const w = op.invokedMs < judgedFrom ? early : judged;
      w.total++;
      if (!isIndeterminate(op)) w.answered++;
      else {
        lastFailure = Math.max(lastFailure, op.invokedMs - healed);
        failures[key(op)] = (failures[key(op)] ?? 0) + 1;
      }
    }
    recovery.push({
      fault: name,
      healedMs: healed,
      early,
      judged,
      lastFailureAfterHealMs: lastFailure,
      failures,
    });
    inv.recovery.check(
      judged.total > 0 && judged.answered >= judged.total * h.facts.recovery.rate,
      () =>
        `${name}: ${judged.answered}/${judged.total} answered from ${h.facts.recovery.afterMs / 1000} s after the heal`,
    );
  });

  return { invariants: Object.values(inv).map((i) => i.result()), recovery, resolution };
}
