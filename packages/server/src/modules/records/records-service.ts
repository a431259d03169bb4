// The back office's reads (docs/decisions.md, "Back office records"), shared by the console's
// pages: orders across partners paged by keyset, an order with its postings, the ledger's house
// accounts and totals (and its check, run on demand: it reads every posting), a client's balances,
// orders and documents, and a document's file, whose every reading by an operator is on the audit
// trail (a read of KYC data is something a compliance reviewer wants on record).

import { performance } from "node:perf_hooks";
import type { Db } from "../../db/database.ts";
import { inTransaction } from "../../db/transaction.ts";
import type { Clock } from "../../platform/clock.ts";
import type { FileStore } from "../../platform/file-store.ts";
import { type AuditNote, recordAudit } from "../audit/index.ts";
import type { LedgerAdminService, LedgerDifference } from "../ledger/index.ts";
import {
  assetTotals,
  type Cursor,
  clientAccounts,
  clientDocuments,
  type DocumentListRow,
  documentFile,
  findClientId,
  findOrderById,
  houseAccounts,
  type OrderSearch,
  orderPostings,
  searchOrders,
} from "./records-store.ts";
import {
  type AssetTotalRecord,
  assetTotalRecord,
  type ClientBalanceRecord,
  clientBalanceRecord,
  type HouseAccountRecord,
  houseAccountRecord,
  type OrderRecord,
  orderRecord,
  type PostingRecord,
  postingRecord,
} from "./records-views.ts";

export type { Cursor, DocumentListRow, OrderSearch };

/** A keyset page: its rows and the cursor of the next page (null on the last). */
export interface KeysetPage<T> {
  items: T[];
  next: Cursor | null;
}

export const clientDocumentsShown = 100;

export class RecordsService {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #files: FileStore;
  readonly #ledger: LedgerAdminService;

  constructor(db: Db, clock: Clock, files: FileStore, ledger: LedgerAdminService) {
    this.#db = db;
    this.#clock = clock;
    this.#files = files;
    this.#ledger = ledger;
  }

  /** A page of orders matching `f`, newest first, after `after`. */
  async orders(f: OrderSearch, after: Cursor | null, pageSize: number): Promise<KeysetPage<OrderRecord>> {
    const rows = await searchOrders(this.#db, f, after, pageSize + 1);
    const items = rows.slice(0, pageSize).map(orderRecord);
    const last = rows.length > pageSize ? rows[pageSize - 1] : undefined;
    return { items, next: last === undefined ? null : { at: last.created_at, id: last.id } };
  }

  async order(id: number): Promise<{ order: OrderRecord; postings: PostingRecord[] } | null> {
    const row = await findOrderById(this.#db, id);
    if (row === undefined) return null;
    const postings = await orderPostings(this.#db, id);
    return { order: orderRecord(row), postings: postings.map(postingRecord) };
  }

  async ledger(): Promise<{ house: HouseAccountRecord[]; totals: AssetTotalRecord[] }> {
    const [house, totals] = await Promise.all([houseAccounts(this.#db), assetTotals(this.#db)]);
    return { house: house.map(houseAccountRecord), totals: totals.map(assetTotalRecord) };
  }

  /** The full ledger check (LedgerAdminService.check): its differences and how long it took. */
  async checkLedger(): Promise<{ differences: LedgerDifference[]; ms: number }> {
    const start = performance.now();
    const differences = await this.#ledger.check();
    return { differences, ms: Math.round(performance.now() - start) };
  }

  /** The client's internal id, or null when the partner has no such client. */
  async clientId(partnerId: string, partnerClientId: string): Promise<number | null> {
    return (await findClientId(this.#db, partnerId, partnerClientId)) ?? null;
  }

  async clientBalances(clientId: number): Promise<ClientBalanceRecord[]> {
    return (await clientAccounts(this.#db, clientId)).map(clientBalanceRecord);
  }

  async clientDocuments(clientId: number): Promise<DocumentListRow[]> {
    return clientDocuments(this.#db, clientId, clientDocumentsShown);
  }

  /**
   * A document's file for an operator, recorded on the audit trail (`document.read`) in the
   * transaction that reads its row. null when there is no such document, side or file.
   */
  async readDocument(
    documentId: number,
    side: "front" | "back",
    note: AuditNote,
  ): Promise<{ bytes: Buffer; contentType: string } | null> {
    const file = await inTransaction(this.#db, async (tx) => {
      const f = await documentFile(tx, documentId, side);
      if (f === undefined) return undefined;
      await recordAudit(tx, this.#clock, note, {
        action: "document.read",
        targetType: "client",
        targetId: `${f.partner_id}/${f.partner_client_id}`,
        before: null,
        after: { document_id: documentId, side },
      });
      return f;
    });
    if (file === undefined) return null;
    const bytes = await this.#files.get(file.key);
    return bytes === null ? null : { bytes, contentType: file.content_type };
  }
}
