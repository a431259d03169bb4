// Queries on documents and the files they point at. Each takes a db or a transaction.

import type { Insertable, Selectable } from "kysely";
import type { Db } from "../../db/database.ts";
import type { ClientDocumentsTable, DocumentFilesTable, DocumentType } from "../../db/schema.ts";
import type { Tx } from "../../db/transaction.ts";

type Q = Db | Tx;

export type DocumentRow = Selectable<ClientDocumentsTable>;
export type FileRow = Selectable<DocumentFilesTable>;

export async function insertFile(db: Q, row: Insertable<DocumentFilesTable>): Promise<void> {
  await db.insertInto("document_files").values(row).execute();
}

export async function insertDocument(db: Q, row: Insertable<ClientDocumentsTable>): Promise<DocumentRow> {
  return db.insertInto("client_documents").values(row).returningAll().executeTakeFirstOrThrow();
}

/** One document of one client; another client's document is absent. */
export async function findDocument(db: Q, clientId: number, id: number): Promise<DocumentRow | undefined> {
  return db
    .selectFrom("client_documents")
    .selectAll()
    .where("client_id", "=", clientId)
    .where("id", "=", id)
    .executeTakeFirst();
}

/** The partner's documents among `ids` (the events feed renders its document events with them). */
export async function findDocumentsByIds(
  db: Q,
  partnerId: string,
  ids: readonly number[],
): Promise<DocumentRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom("client_documents as d")
    .innerJoin("clients as c", "c.id", "d.client_id")
    .selectAll("d")
    .where("c.partner_id", "=", partnerId)
    .where("d.id", "in", [...ids])
    .execute();
}

export async function listDocuments(
  db: Q,
  clientId: number,
  types: readonly DocumentType[],
  page: number,
  pageSize: number,
): Promise<{ rows: DocumentRow[]; total: number }> {
  let q = db.selectFrom("client_documents").where("client_id", "=", clientId);
  if (types.length > 0) q = q.where("type", "in", [...types]);
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

export async function findFile(db: Q, key: string): Promise<FileRow | undefined> {
  return db.selectFrom("document_files").selectAll().where("key", "=", key).executeTakeFirst();
}
