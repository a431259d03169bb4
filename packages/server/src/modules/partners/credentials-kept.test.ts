// A partner's credentials kept on its row by the database (migration 0030; docs/decisions.md, "A
// partner's credentials kept on its row"): partners.active_keys and partners.credentials always
// equal what the partner's row and its keys give, whichever way a key or the row changes, by the
// service or by hand, one change at a time or at once; a partner from before the migration gets
// them from it; the key table cannot be emptied behind their back.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import { after, before, describe, test } from "node:test";
import { generateKeyPair } from "@counterpart/protocol";
import { sql } from "kysely";
import type { DatabaseHandle } from "../../db/database.ts";
import { migrate } from "../../db/migrate.ts";
import type { Tx } from "../../db/transaction.ts";
import { openTestDatabase } from "../../testing/harness.ts";
import { openDatabaseBefore } from "../../testing/migrations.ts";
import { credentialsColumn, credentialsFromJson, readCredentials } from "./partners-store.ts";

type Q = DatabaseHandle["db"] | Tx;

/**
 * The credentials as the service built them before migration 0030, from the row and its keys at
 * every statement: what the kept columns must equal.
 */
async function computed(db: Q, id: string) {
  const { rows } = await sql<{ keys: string[]; text: string }>`
    SELECT c.public_keys AS keys, to_jsonb(c)::text AS text FROM (
      SELECT p.id, p.allowed_ips, p.active, p.rate_limit_reads, p.rate_limit_writes,
        p.rate_limit_quotes, ARRAY(
          SELECT k.public_key_pem FROM partner_keys k
          WHERE k.partner_id = p.id AND k.retired_at IS NULL
          ORDER BY k.created_at DESC, k.id DESC
        ) AS public_keys
      FROM partners p WHERE p.id = ${id}
    ) c`.execute(db);
  return rows[0];
}

async function kept(db: Q, id: string) {
  const { rows } = await sql<{ keys: string[]; text: string }>`
    SELECT active_keys AS keys, credentials AS text FROM partners WHERE id = ${id}`.execute(db);
  return rows[0];
}

/** The kept columns equal the computed ones, and the service's readers give the same. */
async function assertKept(db: Q, id: string, expectedKeys: string[]) {
  const want = await computed(db, id);
  assert.ok(want !== undefined, "no such partner");
  assert.deepEqual(want.keys, expectedKeys, "the test's own expectation of the active keys");
  assert.deepEqual(await kept(db, id), want);
  const read = await readCredentials(db, id);
  assert.deepEqual(read.partner?.public_keys, expectedKeys);
  const witnessed = (await db.selectNoFrom(credentialsColumn(id).as("c")).executeTakeFirstOrThrow()).c;
  assert.equal(witnessed, want.text);
  assert.deepEqual(credentialsFromJson(witnessed), read.partner);
}

const pem = () => generateKeyPair().publicKeyPem;

async function insertPartner(db: Q, id: string) {
  await sql`INSERT INTO partners (id, name, allowed_ips) VALUES (${id}, 'Kept', '{127.0.0.1/32}')`.execute(
    db,
  );
}

async function insertKey(
  db: Q,
  partnerId: string,
  key: string,
  createdAt: string,
  keyId = crypto.randomUUID(),
) {
  await sql`INSERT INTO partner_keys (id, partner_id, label, public_key_pem, created_at)
    VALUES (${keyId}, ${partnerId}, 'k', ${key}, ${createdAt}::timestamptz)`.execute(db);
  return keyId;
}

describe("a partner's credentials kept on its row", () => {
  let database: DatabaseHandle;
  before(async () => {
    database = await openTestDatabase();
  });
  after(async () => {
    await database.close();
  });

  test("every change of a key or of the row, by any statement, leaves them equal to the row and its keys", async () => {
    const db = database.db;
    const id = crypto.randomUUID();
    const other = crypto.randomUUID();
    await insertPartner(db, id);
    await insertPartner(db, other);
    await assertKept(db, id, []);

    const [a, b, c] = [pem(), pem(), pem()];
    const aId = await insertKey(db, id, a, "2026-01-01T00:00:00Z");
    await assertKept(db, id, [a]);
    const bId = await insertKey(db, id, b, "2026-02-01T00:00:00Z");
    await assertKept(db, id, [b, a]);
    // Two keys made at the same instant: the greater id first, as the ORDER BY says.
    const cId = await insertKey(db, id, c, "2026-02-01T00:00:00Z", "ffffffff-ffff-4fff-bfff-ffffffffffff");
    await assertKept(db, id, [c, b, a]);

    await sql`UPDATE partner_keys SET retired_at = now() WHERE id = ${bId}`.execute(db);
    await assertKept(db, id, [c, a]);
    await sql`UPDATE partner_keys SET created_at = '2027-01-01T00:00:00Z' WHERE id = ${aId}`.execute(db);
    await assertKept(db, id, [a, c]);
    // A key moved to another partner leaves the first and joins the second.
    await sql`UPDATE partner_keys SET partner_id = ${other} WHERE id = ${cId}`.execute(db);
    await assertKept(db, id, [a]);
    await assertKept(db, other, [c]);
    await sql`DELETE FROM partner_keys WHERE id = ${aId}`.execute(db);
    await assertKept(db, id, []);

    // The row's own fields.
    await sql`UPDATE partners SET allowed_ips = '{10.0.0.0/8,::1/128}', active = false,
      rate_limit_reads = 7, rate_limit_quotes = 9 WHERE id = ${other}`.execute(db);
    await assertKept(db, other, [c]);
    const text = (await kept(db, other))!.text;
    assert.deepEqual(JSON.parse(text), {
      id: other,
      allowed_ips: ["10.0.0.0/8", "::1/128"],
      active: false,
      rate_limit_reads: 7,
      rate_limit_writes: null,
      rate_limit_quotes: 9,
      public_keys: [c],
    });
    // Written by hand, they are set again from the row and its keys.
    await sql`UPDATE partners SET active_keys = '{forged}', credentials = 'forged' WHERE id = ${other}`.execute(
      db,
    );
    await assertKept(db, other, [c]);
    await sql`UPDATE partners SET name = 'Renamed' WHERE id = ${other}`.execute(db);
    await assertKept(db, other, [c]);

    // A key change rolled back leaves them as they were.
    await db
      .transaction()
      .execute(async (tx) => {
        await insertKey(tx, other, pem(), "2028-01-01T00:00:00Z");
        throw new Error("rolled back");
      })
      .catch((e: unknown) => assert.equal((e as Error).message, "rolled back"));
    await assertKept(db, other, [c]);
  });

  test("the key table cannot be emptied at once, which would bypass its rows' triggers", async () => {
    const id = crypto.randomUUID();
    await insertPartner(database.db, id);
    const key = pem();
    await insertKey(database.db, id, key, "2026-01-01T00:00:00Z");
    await assert.rejects(sql`TRUNCATE partner_keys CASCADE`.execute(database.db), /cannot be truncated/);
    await assertKept(database.db, id, [key]);
  });

  test("on PostgreSQL, two transactions changing one partner's keys at once leave them as both changes give", async () => {
    if (database.kind !== "postgres") {
      // PGlite has one session: no two transactions at once.
      assert.equal(database.kind, "pglite");
      return;
    }
    const db = database.db;
    for (const firstRetires of [true, false]) {
      const id = crypto.randomUUID();
      await insertPartner(db, id);
      const old = pem();
      const oldId = await insertKey(db, id, old, "2026-01-01T00:00:00Z");
      const added = pem();
      // The first transaction makes its change and holds it; the second makes the other change
      // and, through its trigger, waits for the partner's row; then the first commits. Without
      // the wait and a snapshot taken after it, the second would keep the keys as it saw them
      // before the first's commit: a retired key kept active, or an added one missing.
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let firstPid = 0;
      let ready!: () => void;
      const changed = new Promise<void>((resolve) => {
        ready = resolve;
      });
      const retire = (tx: Tx) =>
        sql`UPDATE partner_keys SET retired_at = now() WHERE id = ${oldId}`.execute(tx);
      const add = (tx: Tx) => insertKey(tx, id, added, "2026-06-01T00:00:00Z");
      const first = db.transaction().execute(async (tx) => {
        firstPid = (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(tx)).rows[0]!.pid;
        await (firstRetires ? retire(tx) : add(tx));
        ready();
        await held;
      });
      await changed;
      let secondPid = 0;
      const second = db.transaction().execute(async (tx) => {
        secondPid = (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(tx)).rows[0]!.pid;
        await (firstRetires ? add(tx) : retire(tx));
      });
      const deadline = Date.now() + 10_000;
      for (;;) {
        const { rows } = await sql<{ blocked: boolean }>`
          SELECT ${firstPid}::int = ANY (pg_blocking_pids(${secondPid}::int)) AS blocked`.execute(db);
        if (secondPid !== 0 && rows[0]?.blocked === true) break;
        assert.ok(Date.now() < deadline, "the second transaction was never seen waiting for the first");
        await new Promise((r) => setTimeout(r, 20));
      }
      release();
      await Promise.all([first, second]);
      await assertKept(db, id, [added]);
    }
  });
});

describe("migration 0030: the partners of before it get their credentials from it", () => {
  test("a partner with keys, retired ones among them, and one without", async () => {
    const { database, close } = await openDatabaseBefore("0030");
    try {
      const withKeys = crypto.randomUUID();
      const without = crypto.randomUUID();
      const [a, b, retired] = [pem(), pem(), pem()];
      await database.withScriptSession(async (run) => {
        await run(`INSERT INTO partners (id, name, allowed_ips, rate_limit_writes)
          VALUES ('${withKeys}', 'Old', '{127.0.0.1/32}', 5), ('${without}', 'Keyless', '{}', NULL)`);
        let n = 0;
        for (const [key, at, retiredAt] of [
          [a, "2026-01-01", null],
          [retired, "2026-03-01", "2026-04-01"],
          [b, "2026-02-01", null],
        ] as const) {
          await run(`INSERT INTO partner_keys (id, partner_id, label, public_key_pem, created_at, retired_at)
            VALUES ('${crypto.randomUUID()}', '${withKeys}', 'k${n++}', '${key}', '${at}',
              ${retiredAt === null ? "NULL" : `'${retiredAt}'`})`);
        }
      });
      assert.ok((await migrate(database)).includes("0030_partner_credentials_on_its_row"));
      await assertKept(database.db, withKeys, [b, a]);
      await assertKept(database.db, without, []);
    } finally {
      await close();
    }
  });
});
