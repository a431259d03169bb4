// Queries on orders. Each takes a db or a transaction.

import { type Insertable, type RawBuilder, type SelectQueryBuilder, sql } from "kysely";
import { type CredentialWitness, WitnessedRead } from "../../db/credential-witness.ts";
import type { Db } from "../../db/database.ts";
import type { OrderSource, OrderStatus, OrdersTable } from "../../db/schema.ts";
import type { Tx } from "../../db/transaction.ts";
import type { OrderRow } from "./order-views.ts";

type Q = Db | Tx;

/**
 * Every column of an order, by name. Prepared statements read orders by these, never by `*`: a
 * prepared `*` fails ("cached plan must not change result type", SQLSTATE 0A000) once a migration
 * adds a column and the statement's plan is made again, which PostgreSQL does whenever its caches
 * are reset (db/kept-statement.ts). A column of OrdersTable missing here fails the type check.
 */
export const orderColumnNames = [
  "id",
  "partner_id",
  "client_id",
  "partner_order_ref",
  "type",
  "source",
  "status",
  "price",
  "credit",
  "credit_asset_id",
  "debit",
  "debit_asset_id",
  "fee",
  "fee_asset_id",
  "vat",
  "created_at",
  "transitioned_at",
  "updated_at",
] as const satisfies readonly (keyof OrdersTable)[];
const everyColumnNamed: Exclude<keyof OrdersTable, (typeof orderColumnNames)[number]> extends never
  ? true
  : never = true;
void everyColumnNamed;

/** The columns of an order as a select list, each of the composite or alias `of`: `o`, `(b.o)`. */
export function orderColumnList(of: string): RawBuilder<unknown> {
  return sql.raw(orderColumnNames.map((c) => `${of}.${c}`).join(", "));
}

/** Every column of an order, by name, in the reads below. */
const orderColumns = orderColumnNames.map((c) => `o.${c}` as const);

function withClient(db: Q) {
  return db
    .selectFrom("orders as o")
    .innerJoin("clients as c", "c.id", "o.client_id")
    .select(orderColumns)
    .select("c.partner_client_id");
}

/** Inserts an order; a reused reference raises the unique violation `orders_partner_order_ref_key`. */
export async function insertOrder(tx: Tx, row: Insertable<OrdersTable>) {
  return tx.insertInto("orders").values(row).returningAll().executeTakeFirstOrThrow();
}

export async function refTaken(db: Q, partnerId: string, ref: string): Promise<boolean> {
  const row = await db
    .selectFrom("orders")
    .select("id")
    .where("partner_id", "=", partnerId)
    .where("partner_order_ref", "=", ref)
    .executeTakeFirst();
  return row !== undefined;
}

const orderRead = new WitnessedRead((db, p: { partnerId: string; id: number }) =>
  withClient(db).where("o.partner_id", "=", p.partnerId).where("o.id", "=", p.id),
);

const orderByRefRead = new WitnessedRead((db, p: { partnerId: string; ref: string }) =>
  withClient(db).where("o.partner_id", "=", p.partnerId).where("o.partner_order_ref", "=", p.ref),
);

export async function findOrder(
  db: Q,
  partnerId: string,
  id: number,
  witness?: CredentialWitness,
): Promise<OrderRow | undefined> {
  return (await orderRead.select(db, { partnerId, id }, witness))[0];
}

export async function findOrderByRef(
  db: Q,
  partnerId: string,
  ref: string,
  witness?: CredentialWitness,
): Promise<OrderRow | undefined> {
  return (await orderByRefRead.select(db, { partnerId, ref }, witness))[0];
}

/** The partner's orders among `ids` (the events feed renders its order events with them). */
export async function findOrdersByIds(db: Q, partnerId: string, ids: readonly number[]): Promise<OrderRow[]> {
  if (ids.length === 0) return [];
  return withClient(db)
    .where("o.partner_id", "=", partnerId)
    .where("o.id", "in", [...ids])
    .execute();
}

export interface OrderFilter {
  clientId: number | null;
  sources: OrderSource[];
  statuses: OrderStatus[];
  /** timestamptz text, inclusive */
  from: string | null;
  to: string | null;
}

interface PageParameters {
  partnerId: string;
  clientId: number | null;
  sources: OrderSource[];
  statuses: OrderStatus[];
  from: string | null;
  to: string | null;
  limit: number;
  offset: number;
}

/**
 * A page's shape: which of OrderFilter's filters it has, by name, comma-separated; for a first
 * page, then `|` and the rows it reads (firstPageRows).
 */
type PageShape = string;

/**
 * A page's shape read back: the filters it names, whether it has one (a name not of OrderFilter
 * fails the type check), and a first page's rows (none for a later page).
 */
function readShape(shape: PageShape) {
  const [filters = "", rows] = shape.split("|");
  const names = filters.split(",").filter((f) => f !== "");
  const named = new Set(names);
  return {
    names,
    has: (filter: keyof OrderFilter) => named.has(filter),
    firstRows: rows === undefined ? undefined : Number(rows),
  };
}

/**
 * The rows a first page reads, written in its statement as a constant: the least of these that
 * holds the page. PostgreSQL plans a prepared statement once for every run only when that plan is
 * estimated to cost no more than one planned for the run's values; a LIMIT or an OFFSET given as a
 * parameter it takes for a tenth of the rows that match, so that for a partner (or a client) of many
 * orders it planned every page anew, which cost more than running it (docs/decisions.md, "A first
 * page planned once"). Later pages keep both as parameters. Four sizes at most per filter shape
 * keep the statements each connection prepares few.
 */
const firstPageRows = [10, 20, 50, 100] as const;

/**
 * The partner as PostgreSQL plans a page for it without knowing it: read through a sub-select (an
 * InitPlan, run once per statement), it is unknown to the plans made for the runs' values as to
 * the plan made once, so that the two are estimated alike and PostgreSQL keeps the one made once
 * (docs/decisions.md, "A page planned once for any partner"). Given plainly, the plans made for a
 * run's values weigh what that partner has: for a partner smaller than the others, the plan made
 * once came out dearer, and PostgreSQL planned every one of its pages anew, at more cost than the
 * page's run. Every page's orders are found on an index that leads by the partner, which serves
 * the largest partner as well as the smallest. A status or a source stays a value the plan sees:
 * under a status that few orders have, the index by status finds them at once (5 blocks), where
 * the partner's index would be read to its end (8,542 blocks at a million orders).
 */
function unweighedPartner(partnerId: string): RawBuilder<string> {
  return sql<string>`(SELECT ${partnerId}::uuid)`;
}

/** The filters under which a total is read from the kept counts (migrations 0019, 0020, 0028). */
const countedFilters: ReadonlySet<string> = new Set<keyof OrderFilter>(["clientId", "sources", "statuses"]);

/**
 * A page of the partner's orders and how many match, in one statement: the count, joined
 * laterally to the page, so that the statement returns one row even when the page is empty (its
 * order columns then null). Kept per shape (db/kept-statement.ts): a list is one array parameter,
 * so the text depends only on which filters are given, never on how many values a filter holds.
 */
const pageRead = new WitnessedRead(
  (db, p: PageParameters, shape: PageShape) => {
    const { names, has, firstRows } = readShape(shape);
    const thePartner = () => unweighedPartner(p.partnerId);
    /** The partner's orders under the page's filters but its range of dates. */
    const filtered = () => {
      let f = db.selectFrom("orders as o").where("o.partner_id", "=", thePartner());
      if (has("clientId")) f = f.where("o.client_id", "=", p.clientId);
      if (has("sources")) f = f.where("o.source", "=", sql<OrderSource>`any(${p.sources}::text[])`);
      if (has("statuses")) f = f.where("o.status", "=", sql<OrderStatus>`any(${p.statuses}::text[])`);
      return f;
    };
    let q = filtered();
    if (has("from")) q = q.where("o.created_at", ">=", p.from);
    if (has("to")) q = q.where("o.created_at", "<=", p.to);
    // Under a status or a source, the page's orders are found on the index alone, which carries
    // both (migration 0027): the ids of the page, in an index-only scan that passes over the
    // orders of other kinds without reading them, then the page's own orders by id. Otherwise the
    // index's next orders are the page's, read as they are found.
    const onIndex = has("statuses") || has("sources");
    /** The page's bounds: a first page's rows as a constant, any other page's as parameters. */
    const paged = <D, T extends keyof D, O>(query: SelectQueryBuilder<D, T, O>) =>
      firstRows === undefined ? query.limit(p.limit).offset(p.offset) : query.limit(sql.lit(firstRows));
    const pageRows = onIndex
      ? db
          .selectFrom(
            q
              .select(["o.id", "o.created_at"])
              .orderBy("o.created_at", "desc")
              .orderBy("o.id", "desc")
              .$call(paged)
              .as("i"),
          )
          .innerJoin("orders as o", "o.id", "i.id")
          .innerJoin("clients as c", "c.id", "o.client_id")
          .select(orderColumns)
          .select("c.partner_client_id")
      : q
          .innerJoin("clients as c", "c.id", "o.client_id")
          .select(orderColumns)
          .select("c.partner_client_id")
          .orderBy("o.created_at", "desc")
          .orderBy("o.id", "desc")
          .$call(paged);
    // Filtered by nothing but client, source and status, the total is the kept count (migrations
    // 0019, 0020, 0028): a sum over a few rows of the client's, or of the partner's per house slot,
    // instead of a count of every order. It is read in the statement's snapshot, as the page is, so the
    // two agree. A range of dates narrows the total. Then, in the same snapshot, by the partner's
    // (or the client's) first and last order, each found at one end of an index:
    //   - a range that leaves none of the orders out (its start at or before the first, its end at
    //     or after the last) totals the kept count;
    //   - a range that leaves out a shorter span of time than it keeps (from its start back to the
    //     first order, and from its end on to the last) totals the kept count less the orders it
    //     leaves out, counted on each side;
    //   - any other range counts the orders it keeps.
    // The span is a guess at which side holds fewer orders; a wrong guess costs time, never the
    // total. Before that guess, without a client filter, a range that keeps a whole day rolled up
    // (migration 0026, order-days-store.ts) totals the rows of the whole days it keeps of those, plus the
    // orders of the rest of the range, counted: its part of the days on either side, and the days
    // not rolled yet. Any filter added later is counted.
    const kept = names.every((f) => countedFilters.has(f));
    const keptUnlessNarrowed = names.every((f) => countedFilters.has(f) || f === "from" || f === "to");
    // A client's rows (order_counts), or without a client filter the partner's (order_slot_counts,
    // migration 0028): at most 64 per source and status, whatever the number of its clients.
    let counts = has("clientId")
      ? db
          .selectFrom("order_counts as k")
          .where("k.partner_id", "=", thePartner())
          .where("k.client_id", "=", p.clientId)
      : db.selectFrom("order_slot_counts as k").where("k.partner_id", "=", thePartner());
    if (has("sources")) counts = counts.where("k.source", "=", sql<OrderSource>`any(${p.sources}::text[])`);
    if (has("statuses")) counts = counts.where("k.status", "=", sql<OrderStatus>`any(${p.statuses}::text[])`);
    const keptSum = counts.select(sql<string>`coalesce(sum(k.orders), 0)`.as("total"));
    const countedRows = q.select((eb) => eb.fn.countAll<string>().as("total"));
    const countedOf = (f: ReturnType<typeof filtered>) => f.select((eb) => eb.fn.countAll<string>().as("n"));
    /** The first and the last time an order of the partner (or of the client) was made. */
    let ends = db.selectFrom("orders as b").where("b.partner_id", "=", thePartner());
    if (has("clientId")) ends = ends.where("b.client_id", "=", p.clientId);
    // By days only without a client filter: the days are rolled up per partner. How far: a
    // sub-select of its own wherever it is read, so that PostgreSQL runs each once per statement
    // (a column of the row the totals are computed on would make the sums below correlated, run
    // again for each order of the page).
    const byDays = keptUnlessNarrowed && !has("clientId");
    const rolledUntil = sql<string>`(${db
      .selectFrom("order_days_rolled as r")
      .where("r.partner_id", "=", thePartner())
      .select("r.until")})`;
    const firstAndLast = ends.select((eb) => [
      eb.fn.min("b.created_at").as("first"),
      eb.fn.max("b.created_at").as("last"),
    ]);
    // Read only where the shape has them: a parameter read is one placed (db/kept-statement.ts).
    const from = () => sql`${p.from}::timestamptz`;
    const to = () => sql`${p.to}::timestamptz`;
    const leavesNothingOut = sql<boolean>`${has("from") ? sql`${from()} <= e.first` : sql`true`}
      AND ${has("to") ? sql`${to()} >= e.last` : sql`true`}`;
    // The range's part of the time from the first order to the last, and the rest.
    const start = has("from") ? sql`greatest(${from()}, e.first)` : sql`e.first`;
    const stop = has("to") ? sql`least(${to()}, e.last)` : sql`e.last`;
    const leavesLessOut = sql<boolean>`${has("from") && has("to") ? sql`${from()} <= ${to()}` : sql`true`}
      AND (${start} - e.first) + (e.last - ${stop}) < ${stop} - ${start}`;
    const leftOut = sql<string>`${has("from") ? sql`(${countedOf(filtered().where("o.created_at", "<", p.from))})` : sql`0`}
      + ${has("to") ? sql`(${countedOf(filtered().where("o.created_at", ">", p.to))})` : sql`0`}`;
    // The whole days the range keeps of those rolled, as [firstDay, endDay) (dates, UTC; `from`
    // and `to` are inclusive, to the microsecond): their rows, and the orders of the range before
    // and after them, counted.
    const firstDay = has("from")
      ? sql`(((${from()} - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1)`
      : sql`'-infinity'::date`;
    const endDay = has("to")
      ? sql`least(((${to()} + interval '1 microsecond') AT TIME ZONE 'UTC')::date, ${rolledUntil})`
      : rolledUntil;
    const midnight = (day: RawBuilder<unknown>) => sql<string>`((${day})::timestamp AT TIME ZONE 'UTC')`;
    const keepsRolledDays = sql<boolean>`${rolledUntil} IS NOT NULL AND ${firstDay} < ${endDay}`;
    let dayRows = db
      .selectFrom("order_day_counts as d")
      .where("d.partner_id", "=", thePartner())
      .where(sql<boolean>`d.day >= ${firstDay} AND d.day < ${endDay}`);
    if (has("sources")) dayRows = dayRows.where("d.source", "=", sql<OrderSource>`any(${p.sources}::text[])`);
    if (has("statuses"))
      dayRows = dayRows.where("d.status", "=", sql<OrderStatus>`any(${p.statuses}::text[])`);
    const daysSum = dayRows.select(sql<string>`coalesce(sum(d.orders), 0)`.as("n"));
    // Bounded above even without `to`: PostgreSQL takes a bound it cannot know before the statement
    // runs (the day rolled up to) alone for a third of the orders, and would read them all, in
    // parallel; with an upper bound as well it takes the two for a narrow range, read on the index.
    const afterDays = filtered()
      .where("o.created_at", ">=", midnight(endDay))
      .where("o.created_at", "<=", has("to") ? p.to : sql<string>`'infinity'::timestamptz`);
    const byRolledDays = sql<string>`(${daysSum})
      + ${has("from") ? sql`(${countedOf(filtered().where("o.created_at", ">=", p.from).where("o.created_at", "<", midnight(firstDay)))})` : sql`0`}
      + (${countedOf(afterDays)})`;
    // A sub-select in a branch not taken is never run: every range costs two index probes, then
    // one that leaves nothing out the kept counts, one that keeps a day rolled up the days' rows
    // and the count of the rest, one that leaves little out the kept counts and the count of that
    // little, any other the count of what it keeps.
    const counted = kept
      ? keptSum
      : keptUnlessNarrowed
        ? db.selectFrom(firstAndLast.as("e")).select(
            sql<string>`CASE WHEN ${leavesNothingOut} THEN (${keptSum})
                ${byDays ? sql`WHEN ${keepsRolledDays} THEN ${byRolledDays}` : sql``}
                WHEN ${leavesLessOut} THEN (${keptSum}) - (${leftOut})
                ELSE (${countedRows}) END`.as("total"),
          )
        : countedRows;
    // `p.*` names the page's own columns, fixed when the statement is prepared: a column a
    // migration adds to orders does not reach it.
    return db
      .selectFrom(counted.as("n"))
      .leftJoinLateral(pageRows.as("p"), (join) => join.onTrue())
      .select("n.total")
      .selectAll("p")
      .orderBy("p.created_at", "desc")
      .orderBy("p.id", "desc");
  },
  // The credentials ride on the first row alone (the window orders as the statement does, over
  // the page's rows only), not on each of the page's rows.
  (column) => sql`CASE WHEN row_number() OVER (ORDER BY p.created_at DESC, p.id DESC) = 1 THEN ${column} END`,
);

/** A page of the partner's orders and how many match, in one statement (pageRead). */
export async function listOrders(
  db: Q,
  partnerId: string,
  filter: OrderFilter,
  page: number,
  pageSize: number,
  witness?: CredentialWitness,
): Promise<{ rows: OrderRow[]; total: number }> {
  const given = {
    clientId: filter.clientId !== null,
    sources: filter.sources.length > 0,
    statuses: filter.statuses.length > 0,
    from: filter.from !== null,
    to: filter.to !== null,
  } satisfies Record<keyof OrderFilter, boolean>;
  const filters = Object.entries(given)
    .flatMap(([name, on]) => (on ? [name] : []))
    .join(",");
  const firstRows = page === 1 ? firstPageRows.find((n) => n >= pageSize) : undefined;
  const shape = firstRows === undefined ? filters : `${filters}|${firstRows}`;
  const values = { partnerId, ...filter, limit: pageSize, offset: (page - 1) * pageSize };
  const result = await pageRead.select(db, values, witness, shape);
  const first = result[0];
  if (first === undefined) throw new Error("the page of orders returned no row");
  // A first page may read more rows than it holds (firstPageRows): the page is its first ones.
  const rows = (result.filter((r) => r.id !== null) as OrderRow[]).slice(0, pageSize);
  return { rows, total: Number(first.total) };
}
