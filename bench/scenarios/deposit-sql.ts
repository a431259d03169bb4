// The database's side of a deposit, without the service, and what each of its parts costs
// PostgreSQL. pgbench replays the statement the service sends for one signed deposit of a client
// and an asset whose facts its process kept: fund_order() with record_signature() as its partner
// argument (docs/decisions.md, "A signed write recorded in its change's statement") and
// funding_facts_held() as its client argument ("Funding facts witnessed in the order's statement"),
// prepared as the service prepares it, on a fresh database with the project's schema, 20
// connections (the two API processes' pools of 10). Then the same with one part of that work taken
// away at a time, on that database only, each run beside a run of the whole path in the same round,
// rounds alternated:
//
//   the signature's record   fund_order() given the partner's id instead of record_signature()
//   the facts witnessed      the client and the asset read by a statement of their own, and
//                            fund_order() given the client's id (the service's path for facts it
//                            has not kept, and every deposit's before migration 0022): a negative
//                            cost, what the witness saves
//   the order's event        trigger orders_event disabled (migration 0013)
//   the kept counts          trigger orders_counted disabled (migrations 0019, 0020)
//   the postings' balance    trigger postings_balanced disabled (migration 0008)
//   the postings' keys       postings' foreign keys to orders and accounts dropped
//   the orders' asset keys   orders' foreign keys to assets (debit, credit, fee) dropped
//   the order's client key   orders' foreign key to clients dropped
//   the CHECK constraints    every CHECK of orders, accounts, postings, events, order_counts dropped
//   separate CHECKs          each of those tables' CHECKs replaced by one CHECK, the same
//                            conditions joined by AND (a CHECK fails when one of them is false,
//                            as before): what PostgreSQL's per-statement preparation of each CHECK
//                            costs apart from the conditions themselves
//   CHECKs planned per       each of those tables' CHECKs replaced by one calling a PL/pgSQL
//   statement                function of its columns, the same conditions joined by AND: what
//                            reading and planning them at every statement costs, since PL/pgSQL
//                            plans its expressions once per connection
//   the expiry index         used_signatures' index on expires_at (the purge's) dropped
//   two deferred triggers    orders_counted and orders_event replaced by one deferred trigger
//                            whose function does both in one statement
//   the partner's client     orders_partner_client_created dropped (orders_client_created has
//   index                    the same keys after partner_id, and a client has one partner)
//   the 0017 indexes         the back office's five indexes on orders dropped
//   a commit per deposit     8 or 4 deposits of as many clients per transaction, one commit for
//                            them all, bare or each under a savepoint (what a service committing
//                            its concurrent deposits together would send to keep one deposit's
//                            failure from undoing the others'): a negative cost is what committing
//                            together saves. The deposits of a transaction take one of each of
//                            consecutive house slots in ascending order, so that no two
//                            transactions wait for each other in a cycle (with the clients taken
//                            at random, most failed as deadlocks); and 4, 8 or 16 sent as one call
//                            of a function running each in a block with an exception handler
//                            (PL/pgSQL's savepoint), as a service batching them would send them
//   the house slots' sharing the script spreads the house legs over 16 slots instead of the
//                            service's 64 (what the schema allows; 16 before the night of 29 November 2026)
//
// Each is put back (and, for a key or a CHECK, validated over the rows written) before the next
// run. It prints PostgreSQL's CPU per deposit of each run and the difference from the whole path's
// median: what that part costs, which is what taking it away could at most save. Nothing here is a
// change to the service; it is where the time goes (issue "Performance", point 3). Then TPC-B on the
// same database for scale. Environment: BENCH_DATABASE_URL, BENCH_PGBENCH (see deposits.ts),
// BENCH_CONNECTIONS (replaces the 20 connections), BENCH_ROUNDS (default 2), BENCH_PARTS (only the
// parts whose label holds one of these comma-separated words; all by default).
//
// BENCH_LOOP=N measures in one backend instead of pgbench: slices of N deposits, the same
// statements run one deposit after another by a DO block (each committed; synchronous_commit off
// unless BENCH_LOOP_SYNC=on), the backend's own CPU read from /proc. Each part's slice runs beside
// a slice of the whole path
// (before it in even rounds, after it in odd ones), and its cost is the median of those paired
// differences. At 20 connections a host whose speed drifts moves pgbench's rounds by a fifth; a
// pair of slices a second or two apart moves by a few per cent. What a loop leaves out: the
// protocol (parse, bind, the answers sent), the commit's wait for the disk, and what many backends
// cost each other (locks, wake-ups); it measures the statements' own work. It runs no TPC-B.

import fs from "node:fs";
import path from "node:path";
import { sql } from "kysely";
import pg from "pg";
import { type Db, openDatabase } from "../../packages/server/src/db/database.ts";
import { checkLedger } from "../../packages/server/src/modules/ledger/ledger-store.ts";
import { houseSlots } from "../../packages/server/src/modules/ledger/legs.ts";
import { seedBenchPartner } from "../bench-seed.ts";
import {
  clockTicksPerSecond,
  cpuTicks,
  fixed,
  median,
  printTable,
  type Scenario,
  type ScenarioReport,
} from "../lib.ts";
import { findPgbench, type PgbenchResult, pgbenchRun, runCommand } from "../pgbench.ts";
import { freshBenchDatabase, intFromEnv } from "../proc.ts";

const clientCount = 64;
/** The service's connections to PostgreSQL in the deposits scenario: 2 processes × a pool of 10. */
const serviceConnections = 20;

interface Seed {
  partnerId: string;
  publicKeyPem: string;
  firstClientId: number;
}

/** How the deposit's statements name their varying values: pgbench variables or PL/pgSQL ones. */
interface DepositValues {
  /** The client's number (1…clientCount), its id, and a number unique among this run's deposits. */
  n: string;
  id: string;
  unique: string;
}

/** How a run's deposits are made: the whole path, or one with a part taken away. */
interface Variant {
  /** fund_order() records the signature (record_signature() as its partner argument). */
  recorded: boolean;
  /** The house slots the clients are spread over. */
  slots: number;
  /** The facts read by a statement of their own, not witnessed in the order's (as before 0022). */
  factsRead: boolean;
  /** Deposits per transaction (of as many clients), each under a savepoint when `savepoints`. */
  batch: number;
  savepoints: boolean;
  /**
   * The batch sent as one statement, a call of bench_fund_batch() (batchFunction()), which runs
   * each deposit in a block with an exception handler (PL/pgSQL's savepoint).
   */
  inOneCall: boolean;
}

const wholePath: Variant = {
  recorded: true,
  slots: houseSlots,
  factsRead: false,
  batch: 1,
  savepoints: false,
  inOneCall: false,
};

/**
 * The statements of a signed deposit, as the service sends them (see the header): with the
 * client's and the asset's facts kept, the order's alone, its client argument funding_facts_held();
 * with `factsRead`, the facts' statement, then the order's with the client's id.
 */
function depositStatements(seed: Seed, tag: string, variant: Variant, v: DepositValues): string[] {
  const { recorded, slots } = variant;
  const p = `'${seed.partnerId}'`;
  const keys = `ARRAY[E'${seed.publicKeyPem.replace(/\n/g, "\\n")}']::text[]`;
  const signature = `sha512((random() || ' ' || ${v.unique})::text::bytea)`;
  const partner = recorded
    ? `record_signature(${p}, ${signature}, now() + interval '61 s', ${keys}, '{127.0.0.1/32}'::text[], NULL::int, NULL::int, NULL::int)`
    : p;
  // fundingFacts() (modules/funding/funding-store.ts)
  const facts = `SELECT (SELECT json_build_object('id', id, 'partner_client_id', partner_client_id, 'status', status, 'active', active) FROM clients WHERE partner_id = ${p} AND partner_client_id = 'client-' || ${v.n}) AS client, (SELECT json_build_object('type', type, 'published', published, 'depositable', depositable, 'withdrawable', withdrawable) FROM assets WHERE id = 'AED') AS asset`;
  // clientArgument() (modules/funding/funding-store.ts): the facts kept, witnessed.
  const client = variant.factsRead
    ? v.id
    : `funding_facts_held(${p}, ${v.id}, 'client-' || ${v.n}, 'verified', true, 'AED', 'fiat', true, true, true)`;
  // fundOrder() with the signature to record, and fundingLegs()'s legs
  const fund = `SELECT * FROM fund_order(${partner}, ${client}, '${tag}-' || ${v.unique}, 'deposit', 'AED', '1.00'::numeric, (${v.id} % ${slots})::smallint, '{client,omnibus}'::text[], ARRAY[${v.id}, NULL]::bigint[], '{AED,AED}'::text[], '{1.00,-1.00}'::numeric[])`;
  return variant.factsRead ? [facts, fund] : [fund];
}

function depositScript(seed: Seed, tag: string, variant: Variant): string {
  if (variant.batch === 1) {
    const statements = depositStatements(seed, tag, variant, {
      n: ":c",
      id: ":id",
      unique: ":ref || '-' || :client_id",
    });
    return [
      `\\set c random(1, ${clientCount})`,
      `\\set id :c + ${seed.firstClientId - 1}`,
      "\\set ref random(1, 1000000000000000)",
      ...statements.map((s) => `${s};`),
    ].join("\n");
  }
  // `batch` deposits of as many clients in one transaction, one of each of `batch` consecutive house
  // slots taken in ascending order: fund_order() locks the client's account, then the slot's, so
  // every transaction takes its locks in one global order (slot, then client before house) and no
  // two wait for each other in a cycle.
  const first = seed.firstClientId;
  if (clientCount % houseSlots !== 0 || variant.batch > houseSlots)
    throw new Error("a batch spans no slot twice");
  const lines = [`\\set s random(0, ${houseSlots - variant.batch})`, "\\set ref random(1, 1000000000000000)"];
  // One call is a transaction of its own, as the service would send it.
  if (!variant.inOneCall) lines.push("BEGIN;");
  for (let i = 0; i < variant.batch; i++) {
    lines.push(
      `\\set r${i} random(0, ${clientCount / houseSlots - 1})`,
      `\\set id${i} ${first} + (:s + ${i} - ${first % houseSlots} + ${houseSlots}) % ${houseSlots} + ${houseSlots} * :r${i}`,
      `\\set c${i} :id${i} - ${first - 1}`,
    );
    if (variant.inOneCall) continue;
    const statements = depositStatements(seed, tag, variant, {
      n: `:c${i}`,
      id: `:id${i}`,
      unique: `:ref || '-' || :client_id || '-${i}'`,
    });
    if (variant.savepoints) lines.push("SAVEPOINT d;");
    lines.push(...statements.map((s) => `${s};`));
    if (variant.savepoints) lines.push("RELEASE SAVEPOINT d;");
  }
  if (variant.inOneCall) {
    const clients = Array.from({ length: variant.batch }, (_, i) => `:c${i}`).join(", ");
    lines.push(`SELECT bench_fund_batch(ARRAY[${clients}]::int[], '${tag}-' || :ref || '-' || :client_id);`);
    return lines.join("\n");
  }
  lines.push("COMMIT;");
  return lines.join("\n");
}

/**
 * `deposits` deposits in one backend, one after another, each in its own transaction (or `batch`
 * to a transaction, each in a block with an exception handler, PL/pgSQL's savepoint, when
 * `savepoints`): the same statements as the pgbench script, run by a DO block (PERFORM for SELECT).
 */
function depositLoop(seed: Seed, tag: string, variant: Variant, deposits: number): string {
  const statements = depositStatements(seed, tag, variant, { n: "ln", id: "lid", unique: "li" });
  const performed = statements.map((s) => `PERFORM ${s.slice("SELECT ".length)};`);
  const body =
    variant.savepoints || variant.inOneCall
      ? [
          "    BEGIN",
          ...performed.map((s) => `      ${s}`),
          "    EXCEPTION WHEN OTHERS THEN RAISE;",
          "    END;",
        ]
      : performed.map((s) => `    ${s}`);
  return `DO $loop$
DECLARE ln int; lid bigint;
BEGIN
  FOR li IN 1 .. ${deposits} LOOP
    ln := 1 + li % ${clientCount};
    lid := ln + ${seed.firstClientId - 1};
${body.join("\n")}
    IF li % ${variant.batch} = 0 OR li = ${deposits} THEN COMMIT; END IF;
  END LOOP;
END
$loop$`;
}

/**
 * Creates bench_fund_batch(clients, ref): the deposits of `clients` (the bench's client numbers) in
 * one call, each the whole path's statement in a block with an exception handler, as a service
 * batching its deposits would need (one refused must not undo the others; here it re-raises, as
 * the replay expects none); drops it after.
 */
async function batchFunction(db: Db, seed: Seed): Promise<() => Promise<void>> {
  const [fund] = depositStatements(seed, "b", wholePath, { n: "ln", id: "lid", unique: "li" });
  await sql
    .raw(`CREATE FUNCTION bench_fund_batch(p_clients int[], p_ref text) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE ln int; lid bigint; li text;
BEGIN
  FOR k IN 1 .. array_length(p_clients, 1) LOOP
    ln := p_clients[k];
    lid := ln + ${seed.firstClientId - 1};
    li := p_ref || '-' || k;
    BEGIN
      PERFORM ${fund!.slice("SELECT ".length)};
    EXCEPTION WHEN OTHERS THEN RAISE;
    END;
  END LOOP;
END $f$`)
    .execute(db);
  return async () => {
    await sql`DROP FUNCTION bench_fund_batch(int[], text)`.execute(db);
  };
}

interface Part {
  label: string;
  /** Takes the part away (schema changes) and returns what puts it back. */
  remove?: (db: Db, seed: Seed) => Promise<() => Promise<void>>;
  /** How the part's deposits differ from the whole path's (the signature's record, the slots…). */
  variant?: Partial<Variant>;
}

const trigger = (table: string, name: string) => async (db: Db) => {
  await sql.raw(`ALTER TABLE ${table} DISABLE TRIGGER ${name}`).execute(db);
  return async () => {
    await sql.raw(`ALTER TABLE ${table} ENABLE TRIGGER ${name}`).execute(db);
  };
};

/** Drops the constraints `where` selects, and puts them back as they were. */
const constraints = (where: string) => async (db: Db) => {
  const { rows } = await sql<{ t: string; n: string; d: string }>`
    SELECT conrelid::regclass::text AS t, conname AS n, pg_get_constraintdef(oid) AS d
    FROM pg_constraint WHERE ${sql.raw(where)} ORDER BY 1, 2`.execute(db);
  if (rows.length === 0) throw new Error(`no constraint where ${where}`);
  for (const r of rows) await sql.raw(`ALTER TABLE ${r.t} DROP CONSTRAINT ${r.n}`).execute(db);
  return async () => {
    for (const r of rows) await sql.raw(`ALTER TABLE ${r.t} ADD CONSTRAINT ${r.n} ${r.d}`).execute(db);
  };
};

const hotTables = "('orders', 'accounts', 'postings', 'events', 'order_counts')";

/** The conditions of each hot table's CHECKs, by table. */
async function checksByTable(db: Db): Promise<Map<string, string[]>> {
  const { rows } = await sql<{ t: string; d: string }>`
    SELECT conrelid::regclass::text AS t, pg_get_constraintdef(oid) AS d FROM pg_constraint
    WHERE contype = 'c' AND conrelid::regclass::text IN ${sql.raw(hotTables)} ORDER BY 1, conname`.execute(
    db,
  );
  const byTable = new Map<string, string[]>();
  for (const r of rows) {
    const m = /^CHECK (\(.*\))$/s.exec(r.d);
    if (m === null) throw new Error(`a CHECK of ${r.t} reads "${r.d}"`);
    byTable.set(r.t, [...(byTable.get(r.t) ?? []), m[1]!]);
  }
  return byTable;
}

/** Replaces each hot table's CHECKs by one, their conditions joined by AND; puts them back. */
async function mergeChecks(db: Db): Promise<() => Promise<void>> {
  const byTable = await checksByTable(db);
  const putBack = await constraints(`contype = 'c' AND conrelid::regclass::text IN ${hotTables}`)(db);
  for (const [t, conditions] of byTable) {
    await sql
      .raw(`ALTER TABLE ${t} ADD CONSTRAINT ${t}_merged_checks CHECK (${conditions.join(" AND ")})`)
      .execute(db);
  }
  return async () => {
    for (const t of byTable.keys())
      await sql.raw(`ALTER TABLE ${t} DROP CONSTRAINT ${t}_merged_checks`).execute(db);
    await putBack();
  };
}

/**
 * Replaces each hot table's CHECKs by one that calls a PL/pgSQL function of the table's columns
 * returning the same conditions joined by AND; puts them back. PostgreSQL reads a CHECK back from
 * its stored text and plans it at every statement that writes the table, but plans a PL/pgSQL
 * function's expressions once per connection: this is what that reading and planning costs.
 */
async function checksAsFunctions(db: Db): Promise<() => Promise<void>> {
  const byTable = await checksByTable(db);
  const putBack = await constraints(`contype = 'c' AND conrelid::regclass::text IN ${hotTables}`)(db);
  for (const [t, conditions] of byTable) {
    const { rows: columns } = await sql<{ name: string; type: string }>`
      SELECT quote_ident(attname) AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute
      WHERE attrelid = ${t}::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`.execute(db);
    await sql
      .raw(
        `CREATE FUNCTION bench_checks_${t}(${columns.map((c) => `${c.name} ${c.type}`).join(", ")})
         RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $f$ BEGIN RETURN ${conditions.join(" AND ")}; END $f$`,
      )
      .execute(db);
    await sql
      .raw(
        `ALTER TABLE ${t} ADD CONSTRAINT ${t}_checks_in_a_function CHECK (bench_checks_${t}(${columns.map((c) => c.name).join(", ")}))`,
      )
      .execute(db);
  }
  return async () => {
    for (const t of byTable.keys()) {
      await sql.raw(`ALTER TABLE ${t} DROP CONSTRAINT ${t}_checks_in_a_function`).execute(db);
      await sql.raw(`DROP FUNCTION bench_checks_${t}`).execute(db);
    }
    await putBack();
  };
}

/**
 * Replaces the order's two deferred triggers (orders_counted and orders_event) by one whose
 * function does both in one statement, the count's upsert in a WITH of the event's insert (two
 * tables: the order the two are done in changes nothing); puts them back. What the second trigger
 * and statement per order cost apart from the work they do.
 */
async function oneDeferredTrigger(db: Db): Promise<() => Promise<void>> {
  await sql`CREATE FUNCTION bench_order_settled() RETURNS trigger LANGUAGE plpgsql AS $f$
    BEGIN
      WITH counted AS (
        INSERT INTO order_counts AS c (client_id, source, status, partner_id, orders)
        VALUES (NEW.client_id, NEW.source, NEW.status, NEW.partner_id, 1)
        ON CONFLICT (client_id, source, status) DO UPDATE SET orders = c.orders + 1
      )
      INSERT INTO events (partner_id, client_id, type, order_id, created_at)
      SELECT o.partner_id, o.client_id, 'order.' || o.status, o.id, o.created_at
      FROM orders o WHERE o.id = NEW.id;
      RETURN NULL;
    END $f$`.execute(db);
  await sql`ALTER TABLE orders DISABLE TRIGGER orders_counted`.execute(db);
  await sql`ALTER TABLE orders DISABLE TRIGGER orders_event`.execute(db);
  await sql`CREATE CONSTRAINT TRIGGER bench_orders_settled AFTER INSERT ON orders
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bench_order_settled()`.execute(db);
  return async () => {
    await sql`DROP TRIGGER bench_orders_settled ON orders`.execute(db);
    await sql`DROP FUNCTION bench_order_settled()`.execute(db);
    await sql`ALTER TABLE orders ENABLE TRIGGER orders_counted`.execute(db);
    await sql`ALTER TABLE orders ENABLE TRIGGER orders_event`.execute(db);
  };
}

/** Drops one index, and puts it back as it was. */
const index = (name: string) => async (db: Db) => {
  const { rows } = await sql<{ def: string }>`
    SELECT indexdef AS def FROM pg_indexes WHERE indexname = ${name}`.execute(db);
  if (rows.length !== 1) throw new Error(`expected the index ${name}`);
  await sql.raw(`DROP INDEX ${name}`).execute(db);
  return async () => {
    await sql.raw(rows[0]!.def).execute(db);
  };
};

const parts: Part[] = [
  { label: "the signature's record", variant: { recorded: false } },
  // Negative: what witnessing the facts in the order's statement saves against reading them apart.
  { label: "the facts witnessed (read by a statement of their own instead)", variant: { factsRead: true } },
  { label: "the order's event", remove: trigger("orders", "orders_event") },
  { label: "the kept counts", remove: trigger("orders", "orders_counted") },
  { label: "the postings' balance", remove: trigger("postings", "postings_balanced") },
  { label: "the postings' keys", remove: constraints("contype = 'f' AND conrelid = 'postings'::regclass") },
  {
    label: "the orders' asset keys",
    remove: constraints("contype = 'f' AND conrelid = 'orders'::regclass AND confrelid = 'assets'::regclass"),
  },
  {
    label: "the order's client key",
    remove: constraints(
      "contype = 'f' AND conrelid = 'orders'::regclass AND confrelid = 'clients'::regclass",
    ),
  },
  {
    label: "the CHECK constraints",
    remove: constraints(`contype = 'c' AND conrelid::regclass::text IN ${hotTables}`),
  },
  { label: "separate CHECKs (each table's merged into one, the same conditions)", remove: mergeChecks },
  {
    label: "CHECKs read and planned per statement (each table's in one PL/pgSQL function)",
    remove: checksAsFunctions,
  },
  { label: "the replay record's expiry index", remove: index("used_signatures_expires_at") },
  {
    label: "two deferred triggers per order (the event's and the counts' in one)",
    remove: oneDeferredTrigger,
  },
  { label: "the partner's client index on orders", remove: index("orders_partner_client_created") },
  // Negative: what a commit per deposit costs against deposits committed together.
  { label: "a commit per deposit (8 per transaction)", variant: { batch: 8 } },
  {
    label: "a commit per deposit (8 per transaction, each under a savepoint)",
    variant: { batch: 8, savepoints: true },
  },
  {
    label: "a commit per deposit (4 per transaction, each under a savepoint)",
    variant: { batch: 4, savepoints: true },
  },
  ...[4, 8, 16].map((batch) => ({
    label: `a commit per deposit (${batch} per transaction in one call, each in a block with an exception handler)`,
    remove: batchFunction,
    variant: { batch, inOneCall: true },
  })),
  // The service's slots are as many as the schema allows (64, migration 0006); 16 before the night of 29 November.
  { label: `the house slots' sharing (16 slots, not ${houseSlots})`, variant: { slots: 16 } },
  {
    label: "the 0017 indexes",
    remove: async (db) => {
      const { rows } = await sql<{ name: string; def: string }>`
        SELECT indexname AS name, indexdef AS def FROM pg_indexes
        WHERE tablename = 'orders' AND indexname IN
          ('orders_created', 'orders_client_created', 'orders_status_created', 'orders_type_created', 'orders_source_created')`.execute(
        db,
      );
      if (rows.length !== 5) throw new Error(`expected the five 0017 indexes, found ${rows.length}`);
      for (const r of rows) await sql.raw(`DROP INDEX ${r.name}`).execute(db);
      return async () => {
        for (const r of rows) await sql.raw(r.def).execute(db);
      };
    },
  },
];

function minMax(xs: readonly number[]): [number, number] {
  return [Math.min(...xs), Math.max(...xs)];
}

export const depositSql: Scenario = {
  name: "deposit-sql",
  description:
    "the database's side of a signed deposit replayed by pgbench, what each of its parts costs PostgreSQL, and TPC-B",

  async run(ctx): Promise<ScenarioReport> {
    const connections = process.env.BENCH_CONNECTIONS ? ctx.connections : serviceConnections;
    const rounds = intFromEnv("BENCH_ROUNDS", 2, 1, 10);
    const pgbench = findPgbench();
    const { dbName, databaseUrl } = await freshBenchDatabase(ctx.cleanup);
    process.stdout.write(`bench: database ${dbName}; pgbench ${pgbench}\n`);

    const database = await openDatabase({ databaseUrl, pgliteDir: null, poolSize: 2 });
    ctx.cleanup.add("close the bench's database pool", () => database.close());
    const db = database.db;
    const { partnerId, publicKeyPem, clientIds: ids } = await seedBenchPartner(database, clientCount);
    const seed: Seed = { partnerId, publicKeyPem, firstClientId: ids[0]! };
    if (ids.some((id, i) => id !== seed.firstClientId + i)) throw new Error("client ids are not consecutive");

    const hz = clockTicksPerSecond();
    const notes: string[] = [];
    let runs = 0;
    const run = async (label: string, variant: Variant): Promise<{ tps: number; pgUs: number }> => {
      runs += 1;
      const file = path.join(ctx.scratchDir, `deposit-${runs}.sql`);
      fs.writeFileSync(file, `${depositScript(seed, `r${runs}`, variant)}\n`);
      const options = { script: file, protocol: "prepared" as const };
      if (ctx.warmupS > 0) {
        await pgbenchRun(ctx.cleanup, pgbench, databaseUrl, dbName, connections, ctx.warmupS, options);
      }
      process.stdout.write(`bench: pgbench, ${label}, ${ctx.durationS} s\n`);
      const r: PgbenchResult = await pgbenchRun(
        ctx.cleanup,
        pgbench,
        databaseUrl,
        dbName,
        connections,
        ctx.durationS,
        options,
      );
      if (r.failed > 0) notes.push(`${label}: ${r.failed} failed transactions`);
      // Per deposit: a transaction of a batch holds `batch` of them.
      return {
        tps: r.tps * variant.batch,
        pgUs: r.transactions > 0 ? (r.pgCpuTicks / hz / (r.transactions * variant.batch)) * 1e6 : Number.NaN,
      };
    };

    // BENCH_LOOP: the deposits of one slice in one backend (see the header); 0, pgbench.
    const loopDeposits = intFromEnv("BENCH_LOOP", 0, 0, 1_000_000);
    const loop = loopDeposits > 0 ? new pg.Client({ connectionString: databaseUrl }) : null;
    let loopPid = 0;
    if (loop !== null) {
      await loop.connect();
      ctx.cleanup.add("close the loop's connection", () => loop.end());
      // The commit's flush waits on the disk, whose time in the kernel varies with the host's other
      // I/O far more than a statement's CPU does; every slice writes the same WAL either way.
      // BENCH_LOOP_SYNC=on keeps the service's setting, to see what the flush costs.
      if (process.env.BENCH_LOOP_SYNC !== "on") await loop.query("SET synchronous_commit = off");
      loopPid = (await loop.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
    }
    const runLoop = async (label: string, variant: Variant): Promise<{ tps: number; pgUs: number }> => {
      runs += 1;
      // A quarter as many first, unmeasured: the plans made again after a schema change, the caches.
      await loop!.query(depositLoop(seed, `w${runs}`, variant, Math.ceil(loopDeposits / 4)));
      process.stdout.write(`bench: one backend, ${label}, ${loopDeposits} deposits\n`);
      const ticks = cpuTicks(loopPid);
      const started = performance.now();
      await loop!.query(depositLoop(seed, `r${runs}`, variant, loopDeposits));
      const s = (performance.now() - started) / 1000;
      return { tps: loopDeposits / s, pgUs: ((cpuTicks(loopPid) - ticks) / hz / loopDeposits) * 1e6 };
    };

    const whole: { tps: number; pgUs: number }[] = [];
    const without = new Map<string, { tps: number; pgUs: number }[]>();
    /** In a loop, each part's difference from the whole path's slice run beside it, by round. */
    const paired = new Map<string, number[]>();
    const only = (process.env.BENCH_PARTS ?? "").split(",").filter((w) => w.trim() !== "");
    const chosen = parts.filter((p) => only.length === 0 || only.some((w) => p.label.includes(w.trim())));
    if (chosen.length === 0)
      throw new Error(`BENCH_PARTS matches no part: ${parts.map((p) => p.label).join("; ")}`);
    const runPart = async (part: Part, measure: typeof run) => {
      const putBack = part.remove === undefined ? null : await part.remove(db, seed);
      try {
        const r = await measure(`without ${part.label}`, { ...wholePath, ...part.variant });
        without.set(part.label, [...(without.get(part.label) ?? []), r]);
        return r;
      } finally {
        await putBack?.();
      }
    };
    for (let round = 0; round < rounds; round++) {
      if (loop === null) {
        whole.push(await run("the whole path", wholePath));
        for (const part of chosen) await runPart(part, run);
        continue;
      }
      // One slice of the whole path beside each part's, first in even rounds and second in odd.
      for (const part of chosen) {
        const wholeFirst = round % 2 === 0;
        const w1 = wholeFirst ? await runLoop("the whole path", wholePath) : null;
        const r = await runPart(part, runLoop);
        const w = w1 ?? (await runLoop("the whole path", wholePath));
        whole.push(w);
        paired.set(part.label, [...(paired.get(part.label) ?? []), w.pgUs - r.pgUs]);
      }
    }
    const ledger = await checkLedger(db);
    if (ledger.length > 0) notes.push(`INCONSISTENT: ledger check: ${JSON.stringify(ledger.slice(0, 5))}`);
    await loop?.end();
    await database.close();

    const wholeUs = median(whole.map((r) => r.pgUs));
    const perRound = (rs: readonly { tps: number; pgUs: number }[]) => [
      rs.map((r) => fixed(r.tps, 0)).join(", "),
      rs.map((r) => fixed(r.pgUs, 0)).join(", "),
    ];
    const rows: string[][] = [
      loop === null
        ? ["the whole path", ...perRound(whole), ""]
        : [
            `the whole path (${whole.length} slices: median, least, most)`,
            [median(whole.map((r) => r.tps)), ...minMax(whole.map((r) => r.tps))]
              .map((x) => fixed(x, 0))
              .join(", "),
            [wholeUs, ...minMax(whole.map((r) => r.pgUs))].map((x) => fixed(x, 0)).join(", "),
            "",
          ],
    ];
    const results: Record<string, unknown> = {
      mode: loop === null ? { pgbench: { connections } } : { loop: { deposits_per_slice: loopDeposits } },
      whole,
      parts: {} as Record<string, unknown>,
    };
    for (const part of chosen) {
      const rs = without.get(part.label) ?? [];
      // pgbench: the part's median against the whole path's; a loop: the median of the differences
      // from the slice beside it, which the host's drift between slices moves far less.
      const saved =
        loop === null ? wholeUs - median(rs.map((r) => r.pgUs)) : median(paired.get(part.label) ?? []);
      (results.parts as Record<string, unknown>)[part.label] = {
        runs: rs,
        pg_cpu_us_saved: saved,
        ...(loop === null ? {} : { paired_differences_us: paired.get(part.label) }),
      };
      rows.push([`without ${part.label}`, ...perRound(rs), fixed(saved, 0)]);
    }

    if (loop !== null) {
      printTable(
        `a signed deposit's statements on PostgreSQL alone (one backend, ${loopDeposits} deposits per slice, synchronous_commit ${process.env.BENCH_LOOP_SYNC === "on" ? "on" : "off"}, ${rounds} rounds)`,
        [
          "run",
          "deposits/s per round",
          "PG CPU µs/deposit per round",
          "µs saved (median of paired differences)",
        ],
        rows,
      );
      return {
        name: "deposit-sql",
        ok: notes.length === 0,
        targets: [],
        ratios: {},
        serverProblems: {},
        notes,
        results,
      };
    }

    const init = await runCommand(ctx.cleanup, pgbench, ["-i", "-s", "1", "-q", databaseUrl], 300_000);
    if (init.code !== 0) throw new Error(`pgbench -i exited ${init.code}:\n${init.stdout}${init.stderr}`);
    if (ctx.warmupS > 0)
      await pgbenchRun(ctx.cleanup, pgbench, databaseUrl, dbName, connections, ctx.warmupS);
    process.stdout.write(`bench: pgbench TPC-B, ${ctx.durationS} s\n`);
    const tpcb = await pgbenchRun(ctx.cleanup, pgbench, databaseUrl, dbName, connections, ctx.durationS);
    const tpcbUs = tpcb.transactions > 0 ? (tpcb.pgCpuTicks / hz / tpcb.transactions) * 1e6 : Number.NaN;
    rows.push(["TPC-B (prepared)", fixed(tpcb.tps, 0), fixed(tpcbUs, 0), ""]);
    results.tpcb = { tps: tpcb.tps, pg_cpu_us_per_tx: tpcbUs };

    printTable(
      `a signed deposit's statements on PostgreSQL alone (${connections} connections, ${ctx.durationS} s per run, ${rounds} rounds, prepared)`,
      [
        "run",
        "deposits (TPC-B: tx)/s per round",
        "PG CPU µs per deposit (tx) per round",
        "µs saved (÷ whole's median)",
      ],
      rows,
    );
    return {
      name: "deposit-sql",
      ok: notes.length === 0,
      targets: [],
      ratios: { deposit_over_tpcb_tps: median(whole.map((r) => r.tps)) / tpcb.tps },
      serverProblems: {},
      notes,
      results,
    };
  },
};
