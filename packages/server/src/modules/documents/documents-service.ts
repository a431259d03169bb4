// Document use cases (docs/decisions.md, "Documents"): upload, list, read one, and the download behind the signed
// links. Documents are reached only through the partner's own client, so another partner's or
// another client's document is simply absent. Expected failures are values; routes map them.

import type { Db } from "../../db/database.ts";
import type { DocumentContentType, DocumentType } from "../../db/schema.ts";
import { isoFromMs } from "../../db/time.ts";
import { inTransaction, type Tx } from "../../db/transaction.ts";
import type { Clock } from "../../platform/clock.ts";
import { type FileStore, isFileKey } from "../../platform/file-store.ts";
import type { Random } from "../../platform/random.ts";
import { lookUpClient } from "../clients/index.ts";
import type { DocumentPage, DocumentView } from "./document-views.ts";
import {
  type DocumentRow,
  findDocument,
  findDocumentsByIds,
  findFile,
  insertDocument,
  insertFile,
  listDocuments,
} from "./documents-store.ts";
import type { CheckedFile, CheckedUpload } from "./documents-validation.ts";
import type { FileUrlSigner } from "./file-urls.ts";

export type DocumentResult<E extends string> = { ok: true; document: DocumentView } | { ok: false; error: E };

export interface DocumentListQuery {
  types: readonly DocumentType[];
  page: number;
  pageSize: number;
}

export type DocumentPageResult = ({ ok: true } & DocumentPage) | { ok: false; error: "invalid_client" };

export interface Download {
  bytes: Buffer;
  contentType: DocumentContentType;
}

/** Where download links point: `<origin>/v1/files/<key>?expires=…&signature=…`. */
export const filesPath = "/v1/files";

export class DocumentsService {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #files: FileStore;
  readonly #signer: FileUrlSigner;

  constructor(deps: { db: Db; clock: Clock; random: Random; files: FileStore; signer: FileUrlSigner }) {
    this.#db = deps.db;
    this.#clock = deps.clock;
    this.#random = deps.random;
    this.#files = deps.files;
    this.#signer = deps.signer;
  }

  /**
   * Stores the files under fresh random keys, then records them and the document in one
   * transaction. Should storing or recording fail, every file this upload tried to store is removed
   * again (a put that failed or timed out may still have landed) and the failure is thrown: the
   * database is unchanged and a row never points at a missing file; at worst, when the removal
   * fails too, a file is left without a row, which no link can reach. A file store that fails is a
   * FileStoreUnavailableError (503). Errors: invalid_client (2008).
   */
  async upload(
    partnerId: string,
    partnerClientId: string,
    upload: CheckedUpload,
    origin: string,
  ): Promise<DocumentResult<"invalid_client">> {
    const client = await lookUpClient(this.#db, partnerId, partnerClientId);
    if (!client.ok) return client;
    const now = isoFromMs(this.#clock.nowMs());
    const stored: string[] = [];
    try {
      const put = async (file: CheckedFile) => {
        const key = this.#random.bytes(32).toString("base64url");
        stored.push(key);
        await this.#files.put(key, file.bytes);
        return { key, content_type: file.contentType, size_bytes: file.bytes.length, created_at: now };
      };
      const front = await put(upload.front);
      const back = upload.back === null ? null : await put(upload.back);
      const row = await inTransaction(this.#db, async (tx) => {
        await insertFile(tx, front);
        if (back !== null) await insertFile(tx, back);
        return insertDocument(tx, {
          client_id: client.client.id,
          type: upload.type,
          front_file_key: front.key,
          back_file_key: back?.key ?? null,
          created_at: now,
        });
      });
      return { ok: true, document: this.#view(row, origin) };
    } catch (err) {
      await Promise.allSettled(stored.map((key) => this.#files.delete(key)));
      throw err;
    }
  }

  /** The client's documents, newest first, optionally of some types. Errors: invalid_client (2008). */
  async list(
    partnerId: string,
    partnerClientId: string,
    q: DocumentListQuery,
    origin: string,
  ): Promise<DocumentPageResult> {
    const client = await lookUpClient(this.#db, partnerId, partnerClientId);
    if (!client.ok) return client;
    const { rows, total } = await listDocuments(this.#db, client.client.id, q.types, q.page, q.pageSize);
    return {
      ok: true,
      items: rows.map((r) => this.#view(r, origin)),
      total,
      page: q.page,
      page_size: q.pageSize,
    };
  }

  /** Errors: invalid_client (2008), then not_found (404: absent or another client's). */
  async get(
    partnerId: string,
    partnerClientId: string,
    documentId: number | null,
    origin: string,
  ): Promise<DocumentResult<"invalid_client" | "not_found">> {
    const client = await lookUpClient(this.#db, partnerId, partnerClientId);
    if (!client.ok) return client;
    const row = documentId === null ? undefined : await findDocument(this.#db, client.client.id, documentId);
    if (row === undefined) return { ok: false, error: "not_found" };
    return { ok: true, document: this.#view(row, origin) };
  }

  /**
   * The partner's documents among `ids`, as the API shows them (fresh links to `origin`), by id;
   * absent ids are left out. In the caller's transaction when given one.
   */
  async views(
    partnerId: string,
    ids: readonly number[],
    origin: string,
    q: Db | Tx = this.#db,
  ): Promise<Map<number, DocumentView>> {
    const rows = await findDocumentsByIds(q, partnerId, ids);
    return new Map(rows.map((r) => [r.id, this.#view(r, origin)]));
  }

  /** The bytes behind a signed link, or null for a link that is not valid now (or a lost file). */
  async download(key: string, expires: string, signature: string): Promise<Download | null> {
    if (!isFileKey(key) || !this.#signer.verify(key, expires, signature, this.#clock.nowMs())) return null;
    const file = await findFile(this.#db, key);
    if (file === undefined) return null;
    const bytes = await this.#files.get(key);
    return bytes === null ? null : { bytes, contentType: file.content_type };
  }

  #link(key: string, origin: string): string {
    const { expires, signature } = this.#signer.sign(key, this.#clock.nowMs());
    return `${origin}${filesPath}/${key}?expires=${expires}&signature=${signature}`;
  }

  #view(row: DocumentRow, origin: string): DocumentView {
    return {
      id: row.id,
      type: row.type,
      front_file: this.#link(row.front_file_key, origin),
      back_file: row.back_file_key === null ? null : this.#link(row.back_file_key, origin),
      created_at: row.created_at,
    };
  }
}
