// Queries on clients. Each takes a db or a transaction. Uniqueness per partner lives in the
// database (migration 0002): the checks here only choose which code a duplicate reports first.

import { type Insertable, sql, type Updateable } from "kysely";
import type { Db } from "../../db/database.ts";
import type { ClientStatus, ClientsTable } from "../../db/schema.ts";
import type { Tx } from "../../db/transaction.ts";
import type { ClientRow } from "./client-views.ts";

type Q = Db | Tx;

export async function insertClient(db: Q, row: Insertable<ClientsTable>): Promise<ClientRow> {
  return db.insertInto("clients").values(row).returningAll().executeTakeFirstOrThrow();
}

/** The client's id, status and activity: what client-check.ts judges. */
export async function findClientStanding(db: Q, partnerId: string, partnerClientId: string) {
  return db
    .selectFrom("clients")
    .select(["id", "partner_client_id", "status", "active"])
    .where("partner_id", "=", partnerId)
    .where("partner_client_id", "=", partnerClientId)
    .executeTakeFirst();
}

export async function findClient(
  db: Q,
  partnerId: string,
  partnerClientId: string,
): Promise<ClientRow | undefined> {
  return db
    .selectFrom("clients")
    .selectAll()
    .where("partner_id", "=", partnerId)
    .where("partner_client_id", "=", partnerClientId)
    .executeTakeFirst();
}

/** The client's row, locked for the rest of the transaction. */
export async function findClientForUpdate(tx: Tx, id: number): Promise<ClientRow | undefined> {
  return tx.selectFrom("clients").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
}

export async function updateClient(
  db: Q,
  id: number,
  changes: Updateable<ClientsTable>,
): Promise<ClientRow | undefined> {
  return db.updateTable("clients").set(changes).where("id", "=", id).returningAll().executeTakeFirst();
}

export interface UniqueValues {
  partnerClientId: string | null;
  email: string;
  phone: string;
  governmentIdNumber: string;
}

export interface Conflicts {
  partnerClientId: boolean;
  email: boolean;
  phone: boolean;
  governmentIdNumber: boolean;
}

/**
 * Which of the unique values another client of the partner already holds (e-mail compared
 * case-insensitively, as the unique index does). `exceptId` leaves the client being updated out.
 */
export async function findConflicts(
  db: Q,
  partnerId: string,
  values: UniqueValues,
  exceptId: number | null,
): Promise<Conflicts> {
  const pcid = values.partnerClientId;
  const row = await db
    .selectFrom("clients")
    .select([
      sql<boolean>`coalesce(bool_or(partner_client_id = ${pcid}::text), false)`.as("partner_client_id"),
      sql<boolean>`coalesce(bool_or(lower(email) = lower(${values.email}::text)), false)`.as("email"),
      sql<boolean>`coalesce(bool_or(phone = ${values.phone}), false)`.as("phone"),
      sql<boolean>`coalesce(bool_or(government_id_number = ${values.governmentIdNumber}), false)`.as("gov"),
    ])
    .where("partner_id", "=", partnerId)
    .where((eb) =>
      eb.or([
        ...(pcid === null ? [] : [eb("partner_client_id", "=", pcid)]),
        eb(eb.fn("lower", ["email"]), "=", sql<string>`lower(${values.email}::text)`),
        eb("phone", "=", values.phone),
        eb("government_id_number", "=", values.governmentIdNumber),
      ]),
    )
    .$if(exceptId !== null, (qb) => qb.where("id", "<>", exceptId ?? 0))
    .executeTakeFirstOrThrow();
  return {
    partnerClientId: row.partner_client_id,
    email: row.email,
    phone: row.phone,
    governmentIdNumber: row.gov,
  };
}

/** The ids among `ids` that the catalog supports. */
export async function supportedCountries(db: Q, ids: readonly string[]): Promise<Set<string>> {
  const rows = await db
    .selectFrom("countries")
    .select("id")
    .where("id", "in", [...new Set(ids)])
    .where("supported", "=", true)
    .execute();
  return new Set(rows.map((r) => r.id));
}

export interface ClientFilter {
  statuses: readonly ClientStatus[];
  /** timestamptz text, inclusive */
  from: string | null;
  to: string | null;
}

export async function listClients(
  db: Q,
  partnerId: string,
  filter: ClientFilter,
  page: number,
  pageSize: number,
): Promise<{ rows: ClientRow[]; total: number }> {
  let q = db.selectFrom("clients").where("partner_id", "=", partnerId);
  if (filter.statuses.length > 0) q = q.where("status", "in", [...filter.statuses]);
  if (filter.from !== null) q = q.where("created_at", ">=", filter.from);
  if (filter.to !== null) q = q.where("created_at", "<=", filter.to);
  const [count, rows] = await Promise.all([
    q.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow(),
    q
      .selectAll()
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .limit(pageSize)
      .offset((page - 1) * pageSize)
      .execute(),
  ]);
  return { rows, total: Number(count.n) };
}

export interface ClientSearch {
  /** Matched exactly against partner_client_id, e-mail (without case), phone and government id. */
  q: string | null;
  partnerId: string | null;
  status: string | null;
}

/** The back office's client lookup across partners, newest first, one page of it. */
export async function searchClients(
  db: Q,
  f: ClientSearch,
  page: number,
  pageSize: number,
): Promise<{ rows: ClientRow[]; total: number }> {
  let q = db.selectFrom("clients");
  if (f.partnerId !== null) q = q.where("partner_id", "=", f.partnerId);
  if (f.status !== null) q = q.where("status", "=", f.status as ClientRow["status"]);
  if (f.q !== null) {
    const text = f.q;
    q = q.where((eb) =>
      eb.or([
        eb("partner_client_id", "=", text),
        eb(eb.fn("lower", ["email"]), "=", text.toLowerCase()),
        eb("phone", "=", text),
        eb("government_id_number", "=", text),
      ]),
    );
  }
  const [count, rows] = await Promise.all([
    q.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow(),
    q
      .selectAll()
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .limit(pageSize)
      .offset((page - 1) * pageSize)
      .execute(),
  ]);
  return { rows, total: Number(count.n) };
}
