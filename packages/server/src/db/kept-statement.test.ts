// A kept statement answers as the same statement built at every run, is built once per shape and
// per set of plugins, and refuses a build that computes with or branches on a parameter.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs } from "kysely";
import { sql } from "kysely";
import { openTestDatabase } from "../testing/harness.ts";
import type { DatabaseHandle } from "./database.ts";
import { KeptStatement } from "./kept-statement.ts";

let database: DatabaseHandle;
before(async () => {
  database = await openTestDatabase();
  await sql`CREATE TABLE kept_items (id int PRIMARY KEY, name text NOT NULL, tag text, on_sale boolean NOT NULL)`.execute(
    database.db,
  );
  await sql`INSERT INTO kept_items VALUES
    (1, 'one', 'a', true), (2, 'two', 'b', false), (3, 'three', null, true), (4, 'four', 'a', true)`.execute(
    database.db,
  );
});
after(async () => {
  await database.close();
});

/** Counts the queries it transforms, and the results it sees. */
class Counting implements KyselyPlugin {
  transformed = 0;
  results = 0;
  transformQuery(args: PluginTransformQueryArgs) {
    this.transformed++;
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs) {
    this.results++;
    return args.result;
  }
}

interface ItemParams {
  min: number;
  tags: string[];
  limit: number;
}

// biome-ignore lint/suspicious/noExplicitAny: the test table is not in the schema
type Untyped = any;

function items(db: Untyped, p: ItemParams, shape: string) {
  let q = db
    .selectFrom("kept_items")
    .select(["id", "name"])
    .where("id", ">=", p.min)
    .where("on_sale", "=", true);
  if (shape === "tagged") q = q.where("tag", "=", sql`any(${p.tags}::text[])`);
  return q.orderBy("id").limit(p.limit);
}

test("a kept statement answers as the same statement built at each run, for every shape and values", async () => {
  const kept = new KeptStatement<ItemParams, { id: number; name: string }, "" | "tagged">(items);
  const cases: [ItemParams, "" | "tagged"][] = [
    [{ min: 1, tags: [], limit: 10 }, ""],
    [{ min: 2, tags: [], limit: 10 }, ""],
    [{ min: 1, tags: [], limit: 1 }, ""],
    [{ min: 1, tags: ["a"], limit: 10 }, "tagged"],
    [{ min: 1, tags: ["a", "b"], limit: 10 }, "tagged"],
    [{ min: 4, tags: ["a"], limit: 10 }, "tagged"],
    [{ min: 9, tags: ["a"], limit: 10 }, "tagged"],
  ];
  for (const [values, shape] of cases) {
    const expected = await items(database.db, values, shape).execute();
    const got = await kept.execute(database.db, values, shape);
    assert.deepEqual(got, expected, JSON.stringify({ values, shape }));
  }
  assert.deepEqual(
    (await kept.execute(database.db, { min: 1, tags: ["a"], limit: 10 }, "tagged")).map((r) => r.id),
    [1, 4],
  );
});

test("a kept statement is built once per shape and per set of plugins; a transaction shares its database's", async () => {
  let builds = 0;
  const kept = new KeptStatement<ItemParams, { id: number }, "" | "tagged">((db, p, shape) => {
    builds++;
    return items(db, p, shape);
  });
  const values = { min: 1, tags: ["a"], limit: 10 };
  for (let i = 0; i < 3; i++) await kept.execute(database.db, values);
  assert.equal(builds, 1);
  await kept.execute(database.db, values, "tagged");
  assert.equal(builds, 2);
  await database.db.transaction().execute(async (tx) => {
    assert.equal((await kept.execute(tx, values)).length, 3);
  });
  assert.equal(builds, 2);

  // A plugin may rewrite a query: under another set of plugins the statement is built again, and
  // each plugin sees every result.
  const counting = new Counting();
  const withPlugin = database.db.withPlugin(counting);
  for (let i = 0; i < 3; i++) await kept.execute(withPlugin, values);
  assert.equal(builds, 3);
  assert.equal(counting.transformed, 1);
  assert.equal(counting.results, 3);
  await kept.execute(database.db.withPlugin(new Counting()), values);
  assert.equal(builds, 4);
});

test("a kept statement runs on a transaction's connection in it, and fails as the statement built at each run", async () => {
  const kept = new KeptStatement<ItemParams, { id: number; name: string }>(items);
  const values = { min: 9, tags: [], limit: 10 };
  const rolledBack = new Error("rolled back");
  await assert.rejects(
    database.db.transaction().execute(async (tx) => {
      await sql`INSERT INTO kept_items VALUES (9, 'nine', 'a', true)`.execute(tx);
      assert.deepEqual(
        (await kept.execute(tx, values)).map((r) => r.id),
        [9],
      );
      // Outside it, the row is not written yet (on PGlite the one connection is the transaction's).
      if (database.kind === "postgres") assert.deepEqual(await kept.execute(database.db, values), []);
      throw rolledBack;
    }),
    (err) => err === rolledBack,
  );
  assert.deepEqual(await kept.execute(database.db, values), []);
  const quotient = (db: Untyped, p: { d: number }) =>
    db.selectFrom("kept_items").select(sql`1 / ${p.d}::int`.as("q"));
  const failing = new KeptStatement<{ d: number }, unknown>(quotient);
  const code = async (run: Promise<unknown>) => {
    try {
      await run;
      return "none";
    } catch (err) {
      return (err as { code?: unknown }).code;
    }
  };
  assert.equal(await code(failing.execute(database.db, { d: 0 })), "22012");
  assert.equal(await code(quotient(database.db, { d: 0 }).execute()), "22012");
  assert.equal((await failing.execute(database.db, { d: 1 })).length, 4);
});

test("a build that computes with a parameter or branches on it is refused at its first run", async () => {
  const computed = new KeptStatement<{ page: number; size: number }, unknown>((db: Untyped, p) =>
    db
      .selectFrom("kept_items")
      .select("id")
      .limit(p.size)
      .offset((p.page - 1) * p.size),
  );
  await assert.rejects(
    computed.execute(database.db, { page: 2, size: 2 }),
    /parameter "page" is read by its build/,
  );

  const branched = new KeptStatement<{ tag: string | null }, unknown>((db: Untyped, p) => {
    const q = db.selectFrom("kept_items").select("id");
    return p.tag === null ? q : q.where("tag", "is", null);
  });
  await assert.rejects(branched.execute(database.db, { tag: null }), /parameter "tag" is read by its build/);

  const written = new KeptStatement<{ column: string }, unknown>((db: Untyped, p) =>
    db.selectFrom("kept_items").select(sql`${sql.raw(String(p.column))}`.as("x")),
  );
  await assert.rejects(
    written.execute(database.db, { column: "id" }),
    /parameter "column" is read by its build/,
  );
});
