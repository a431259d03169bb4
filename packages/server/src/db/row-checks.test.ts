// Migration 0021 (docs/decisions.md, "Row checks planned once"): the CHECKs of orders, accounts,
// events and quotes moved into one PL/pgSQL function per table. The same writes, on the same
// database before and after the migration, get the same answers: accepted, or refused with the
// same SQLSTATE, constraint, table and message. Every CHECK the migration replaced is refused by
// at least one write here, and nothing a refused write tried stays.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import { describe, test } from "node:test";
import { type Kysely, sql } from "kysely";
import { englishCountryName, seedCatalog } from "../modules/catalog/index.ts";
import { insertClient } from "../testing/fixtures.ts";
import { openDatabaseBefore } from "../testing/migrations.ts";
import type { Db } from "./database.ts";
import { migrate } from "./migrate.ts";

const tables = ["orders", "accounts", "events", "quotes"] as const;
type Table = (typeof tables)[number];

interface Write {
  what: string;
  table: Table;
  /** An insert of the table's valid row with these columns changed, or an update of a row. */
  values?: Record<string, unknown>;
  update?: { set: Record<string, unknown>; where: Record<string, unknown> };
}

type Outcome = { accepted: true } | { code: string; constraint: string; table: string; message: string };

/** The writes: the valid row, each CHECK broken alone, NULLs that pass, two broken at once. */
function writes(ids: { partnerId: string; clientId: number; orderId: number }): Write[] {
  const order = {
    partner_id: ids.partnerId,
    client_id: ids.clientId,
    partner_order_ref: "checks-1",
    type: "deposit",
    source: "bank",
    status: "completed",
    debit: "1",
    debit_asset_id: "AED",
    fee: "0",
    fee_asset_id: "AED",
    vat: "0",
  };
  const account = {
    kind: "client",
    partner_id: ids.partnerId,
    client_id: ids.clientId,
    asset_id: "EUR",
    balance: "5",
    held: "1",
    slot: 0,
  };
  const house = { ...account, kind: "omnibus", client_id: null, slot: 7 };
  const event = {
    partner_id: ids.partnerId,
    client_id: ids.clientId,
    type: "client.created",
    data: "{}",
  };
  const quote = {
    token_hash: Buffer.from("0123456789abcdef0123456789abcdef"),
    partner_id: ids.partnerId,
    client_id: ids.clientId,
    pair_id: "BTC-AED",
    side: "buy",
    price: "349250",
    base_amount: "0.001",
    quote_amount: "349.25",
    fee: "1.75",
    vat: "0",
    created_at: "2026-11-28T00:00:00Z",
    expires_at: "2026-11-28T00:00:15Z",
  };
  const o = (what: string, change: Record<string, unknown>): Write => ({
    what,
    table: "orders",
    values: { ...order, ...change },
  });
  const a = (
    what: string,
    change: Record<string, unknown>,
    base: Record<string, unknown> = account,
  ): Write => ({
    what,
    table: "accounts",
    values: { ...base, ...change },
  });
  const e = (what: string, change: Record<string, unknown>): Write => ({
    what,
    table: "events",
    values: { ...event, ...change },
  });
  const q = (what: string, change: Record<string, unknown>): Write => ({
    what,
    table: "quotes",
    values: { ...quote, ...change },
  });
  return [
    o("a valid order", {}),
    o("a valid trade, price and credit set", {
      type: "buy",
      source: "market",
      price: "3.5",
      credit: "2",
      credit_asset_id: "USDT",
    }),
    o("credit without its asset", { credit: "1" }),
    o("a credit asset without credit", { credit_asset_id: "AED" }),
    o("debit without its asset", { debit_asset_id: null }),
    o("credit zero", { credit: "0", credit_asset_id: "AED" }),
    o("credit NaN", { credit: "NaN", credit_asset_id: "AED" }),
    o("debit negative", { debit: "-1" }),
    o("debit NaN", { debit: "NaN" }),
    o("fee negative", { fee: "-0.01" }),
    o("fee NaN", { fee: "NaN" }),
    o("an empty reference", { partner_order_ref: "" }),
    o("a reference of 256 characters", { partner_order_ref: "r".repeat(256) }),
    o("a reference of 255 characters", { partner_order_ref: "r".repeat(255) }),
    o("no reference (NULL passes)", { partner_order_ref: null }),
    o("price zero", { price: "0" }),
    o("price NaN", { price: "NaN" }),
    o("an unknown source", { source: "atm" }),
    o("an unknown status", { status: "done" }),
    o("a status in another case", { status: "Completed" }),
    o("an unknown type", { type: "gift" }),
    o("vat negative", { vat: "-1" }),
    o("vat NaN", { vat: "NaN" }),
    o("fee and vat negative: the first by name is told", { fee: "-1", vat: "-1" }),
    o("status and type unknown: the first by name is told", { status: "x", type: "y" }),
    {
      what: "an order's status changed to an unknown one",
      table: "orders",
      update: { set: { status: "done" }, where: { id: ids.orderId } },
    },
    {
      what: "an order's fee changed to NaN",
      table: "orders",
      update: { set: { fee: "NaN" }, where: { id: ids.orderId } },
    },
    {
      what: "an order's status changed to a known one",
      table: "orders",
      update: { set: { status: "rejected" }, where: { id: ids.orderId } },
    },

    a("a valid client account", {}),
    a("a valid house account", {}, house),
    a("balance NaN", { balance: "NaN" }),
    a("a house account with a client", { client_id: ids.clientId }, house),
    a("a client account without a client", { client_id: null }),
    a("a client balance below zero", { balance: "-1" }),
    a("a client balance below what it holds", { balance: "1", held: "2" }),
    a("a house balance below zero", { balance: "-100" }, house),
    a("a client account in a slot", { slot: 3 }),
    a("held negative", { held: "-1" }),
    a("held NaN", { held: "NaN" }),
    a("an unknown kind", { kind: "escrow", client_id: null }),
    a("slot 64", { slot: 64 }, house),
    a("slot negative", { slot: -1 }, house),
    a("slot 63", { slot: 63 }, house),
    a("balance negative and held NaN: the first by name is told", { balance: "-1", held: "NaN" }),
    {
      what: "a client's balance set below zero",
      table: "accounts",
      update: { set: { balance: "-1" }, where: { kind: "client", client_id: ids.clientId } },
    },

    e("a valid client event", {}),
    e("a valid order event", { type: "order.completed", order_id: ids.orderId, data: null }),
    e("a valid document event", { type: "document.created", document_id: 1, data: null }),
    e("an order event without its order", { type: "order.completed", data: null }),
    e("a client event with an order", { order_id: ids.orderId }),
    e("a document event without its document", { type: "document.created", data: null }),
    e("a client event with a document", { document_id: 1 }),
    e("a client event without data", { data: null }),
    e("an order event with data", { type: "order.completed", order_id: ids.orderId }),
    e("an unknown client event", { type: "client.deleted" }),
    e("an order event of an odd status", { type: "order.Completed", order_id: ids.orderId, data: null }),
    e("no type at all the checks know", { type: "webhook.sent", data: null }),

    q("a valid quote", {}),
    q("base amount zero", { base_amount: "0" }),
    q("base amount NaN", { base_amount: "NaN" }),
    q("fee negative", { fee: "-1" }),
    q("price NaN", { price: "NaN" }),
    q("quote amount zero", { quote_amount: "0" }),
    q("an unknown side", { side: "hold" }),
    q("vat NaN", { vat: "NaN" }),
    q("side unknown and vat negative: the first by name is told", { side: "x", vat: "-1" }),
  ];
}

class RolledBack extends Error {}

/** Runs the write in a transaction that is always rolled back, and says how it was answered. */
async function attempt(db: Db, w: Write): Promise<Outcome> {
  const any = db as unknown as Kysely<Record<string, Record<string, unknown>>>;
  try {
    await any.transaction().execute(async (tx) => {
      if (w.values !== undefined) {
        await tx.insertInto(w.table).values(w.values).execute();
      } else if (w.update !== undefined) {
        let q = tx.updateTable(w.table).set(w.update.set);
        for (const [k, v] of Object.entries(w.update.where)) q = q.where(k, "=", v);
        const r = await q.executeTakeFirst();
        assert.equal(r.numUpdatedRows, 1n, `${w.what}: the update found its row`);
      }
      throw new RolledBack();
    });
  } catch (err) {
    if (err instanceof RolledBack) return { accepted: true };
    const e = err as { code?: string; constraint?: string; table?: string; message?: string };
    if (e.code === undefined) throw err;
    return { code: e.code, constraint: e.constraint ?? "", table: e.table ?? "", message: e.message ?? "" };
  }
  throw new Error("unreachable: the transaction always throws");
}

/** Every row of the four tables, as text: what a refused write must leave as it was. */
async function contents(db: Db): Promise<string> {
  const parts: string[] = [];
  for (const t of tables) {
    const { rows } = await sql<{
      r: string;
    }>`SELECT ${sql.table(t)}::text AS r FROM ${sql.table(t)} ORDER BY 1`.execute(db);
    parts.push(`${t}: ${rows.map((r) => r.r).join("; ")}`);
  }
  return parts.join("\n");
}

async function checkNames(db: Db): Promise<Map<string, string[]>> {
  const { rows } = await sql<{ t: string; n: string }>`
    SELECT conrelid::regclass::text AS t, conname AS n FROM pg_constraint
    WHERE contype = 'c' AND conrelid::regclass::text IN ('orders', 'accounts', 'events', 'quotes')
    ORDER BY 1, 2`.execute(db);
  const byTable = new Map<string, string[]>();
  for (const r of rows) byTable.set(r.t, [...(byTable.get(r.t) ?? []), r.n]);
  return byTable;
}

describe("migration 0021: each table's CHECKs in one function", () => {
  test("the same writes get the same answers before and after, every CHECK is exercised, and nothing refused stays", async () => {
    const { database, close } = await openDatabaseBefore("0021");
    try {
      const db = database.db;
      await seedCatalog(db, englishCountryName);
      const partnerId = crypto.randomUUID();
      await sql`INSERT INTO partners (id, name) VALUES (${partnerId}, 'Checks')`.execute(db);
      const clientId = (await insertClient(db, partnerId, 1)).id;
      // Rows written before the migration, which its new CHECKs validate.
      const { rows } = await sql<{ id: string }>`
        SELECT id FROM fund_order(${partnerId}::uuid, ${clientId}::bigint, 'before-0021', 'deposit', 'AED',
          10::numeric, 0::smallint, '{client,omnibus}'::text[], ARRAY[${clientId}::bigint, NULL]::bigint[],
          '{AED,AED}'::text[], '{10,-10}'::numeric[])`.execute(db);
      const orderId = Number(rows[0]?.id);
      const cases = writes({ partnerId, clientId, orderId });

      const oldNames = await checkNames(db);
      const before = new Map<string, Outcome>();
      const stateBefore = await contents(db);
      for (const w of cases) before.set(w.what + w.table, await attempt(db, w));
      assert.equal(await contents(db), stateBefore, "a write before the migration left something");

      // Every CHECK the migration replaces is refused by some write here.
      const refused = new Set([...before.values()].flatMap((o) => ("constraint" in o ? [o.constraint] : [])));
      for (const [t, names] of oldNames) {
        for (const n of names) assert.ok(refused.has(n), `no write here breaks ${t}.${n}`);
      }

      assert.ok((await migrate(database)).includes("0021_row_checks_planned_once"));
      const newNames = await checkNames(db);
      assert.deepEqual(
        Object.fromEntries(newNames),
        Object.fromEntries(tables.map((t) => [t, [`${t}_row_checked`]])),
        "each table keeps one CHECK, its function's",
      );
      assert.equal(await contents(db), stateBefore, "the migration changed rows");

      for (const w of cases) {
        const after = await attempt(db, w);
        assert.deepEqual(after, before.get(w.what + w.table), `${w.table}: ${w.what}`);
        if (!("accepted" in after)) {
          assert.equal(after.code, "23514", `${w.table}: ${w.what}`);
          assert.equal(after.table, w.table, `${w.table}: ${w.what}`);
        }
      }
      assert.equal(await contents(db), stateBefore, "a refused write left something");
      const accepted = cases.filter((w) => "accepted" in (before.get(w.what + w.table) ?? {}));
      assert.ok(accepted.length >= 10 && accepted.length < cases.length, "both answers are exercised");
    } finally {
      await close();
    }
  });
});
