// Documents on the S3 store (docs/decisions.md, "Documents"), against a real S3-compatible server
// started here: the partner sees exactly what the local store gives (the same links, the same
// bytes), a bucket that fails or does not answer is a 503 that changed nothing, a database that
// fails after the files were stored leaves no object behind, and a link is judged before the
// bucket is asked, so a bad link is a 404 whatever the bucket's state.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import type { Db } from "../../db/database.ts";
import { type FileStore, FileStoreUnavailableError } from "../../platform/file-store.ts";
import {
  clientPayload,
  clientsState,
  type MultipartPart,
  multipartBody,
  sampleFile,
} from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";
import { startTestS3, type TestS3 } from "../../testing/s3-server.ts";

/** A store that fails chosen puts (as a bucket failing half-way would), and otherwise passes through. */
class FailingPuts implements FileStore {
  readonly #inner: FileStore;
  #puts = 0;
  /** The 0-based numbers of the puts to fail, counted from the last `failPuts` call. */
  #failing = new Set<number>();

  constructor(inner: FileStore) {
    this.#inner = inner;
  }

  failPuts(...which: number[]): void {
    this.#puts = 0;
    this.#failing = new Set(which);
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    if (this.#failing.has(this.#puts++)) throw new FileStoreUnavailableError("file store: put failed");
    await this.#inner.put(key, bytes);
  }

  get(key: string): Promise<Buffer | null> {
    return this.#inner.get(key);
  }

  delete(key: string): Promise<void> {
    return this.#inner.delete(key);
  }
}

const unavailableBody = { code: 503, msg: "Service Unavailable", msg_detail: null };
const notFoundBody = { code: 404, msg: "Not Found", msg_detail: null };
const linkPattern =
  /^http:\/\/[^/]+\/v1\/files\/([A-Za-z0-9_-]{43})\?expires=[0-9]+&signature=[A-Za-z0-9_-]{43}$/;

async function fileRows(db: Db): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*)::int8 AS n FROM document_files`.execute(db);
  return Number(rows[0]!.n);
}

describe("documents on the S3 store", () => {
  let s3: TestS3;
  let store: FailingPuts;
  let ctx: TestContext;
  const pcid = "s3-client-1";
  const docsUrl = `/v1/partner/clients/${pcid}/documents`;

  before(async () => {
    s3 = await startTestS3("kyc-documents");
    // Tight bounds: a bucket that does not answer is given up in about two seconds.
    store = new FailingPuts(s3.store({ connectMs: 500, attemptMs: 1_000, attemptsMax: 2, callMs: 2_000 }));
    ctx = await startTestContext({ fileStore: store });
    const res = await ctx.signed({
      method: "POST",
      url: "/v1/partner/clients",
      body: clientPayload(1, { partner_client_id: pcid }),
    });
    assert.equal(res.statusCode, 201, res.body);
  });
  after(async () => {
    await ctx?.close();
    await s3?.close();
  });

  const front = sampleFile("png", 3000);
  const back = sampleFile("pdf", 2000);
  const parts = (withBack: boolean): MultipartPart[] => [
    { name: "type", data: "government_id" },
    { name: "front_file", filename: "front.png", contentType: "image/png", data: front },
    ...(withBack ? [{ name: "back_file", filename: "back.pdf", data: back }] : []),
  ];

  function upload(withBack = true) {
    const { body, contentType } = multipartBody(parts(withBack));
    return ctx.signed({ method: "POST", url: docsUrl, body, headers: { "content-type": contentType } });
  }

  /** A download through a link, as a partner makes it: no partner headers. */
  function download(link: string) {
    const url = new URL(link);
    return ctx.app.inject({ method: "GET", url: `${url.pathname}${url.search}` });
  }

  /** What a failed upload must leave as it was: the rows, and the bucket. */
  async function state() {
    const db = ctx.services.database.db;
    return { rows: await clientsState(db), files: await fileRows(db), bucket: await s3.keys() };
  }

  test("an upload stores each file under its link's key, and the links give back the exact bytes", async () => {
    const res = await upload();
    assert.equal(res.statusCode, 201, res.body);
    const doc = res.json().result as { front_file: string; back_file: string };
    const frontKey = linkPattern.exec(doc.front_file)?.[1];
    const backKey = linkPattern.exec(doc.back_file)?.[1];
    assert.ok(frontKey !== undefined && backKey !== undefined, `${doc.front_file} ${doc.back_file}`);
    assert.deepEqual(await s3.keys(), [frontKey, backKey].sort());

    for (const [link, bytes, type] of [
      [doc.front_file, front, "image/png"],
      [doc.back_file, back, "application/pdf"],
    ] as const) {
      const got = await download(link);
      assert.equal(got.statusCode, 200);
      assert.ok(got.rawPayload.equals(bytes));
      assert.equal(got.headers["content-type"], type);
      assert.equal(got.headers["content-disposition"], "attachment");
    }
    const read = await ctx.signed({ method: "GET", url: docsUrl });
    assert.equal(read.json().total, 1);
  });

  test("the back file failing to store: a 503 that recorded nothing, and the front file removed again", async () => {
    const before_ = await state();
    store.failPuts(1);
    const res = await upload();
    store.failPuts();
    assert.equal(res.statusCode, 503);
    assert.deepEqual(res.json(), unavailableBody);
    assert.deepEqual(await state(), before_);
  });

  test("the database refusing the document after the files were stored: no row, and no object left", async () => {
    const db = ctx.services.database.db;
    await sql`CREATE FUNCTION refuse_document() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'refused by the test'; END $$`.execute(db);
    await sql`CREATE TRIGGER refuse_document BEFORE INSERT ON client_documents
      FOR EACH ROW EXECUTE FUNCTION refuse_document()`.execute(db);
    try {
      const before_ = await state();
      const res = await upload();
      assert.equal(res.statusCode, 500);
      assert.deepEqual(res.json(), { code: 500, msg: "Internal Server Error", msg_detail: null });
      assert.deepEqual(await state(), before_);
    } finally {
      await sql`DROP TRIGGER refuse_document ON client_documents`.execute(db);
      await sql`DROP FUNCTION refuse_document()`.execute(db);
    }
  });

  test("a bucket that does not answer: uploads and downloads are 503s, a bad link is still a 404, and service resumes with it", async () => {
    const ok = await upload(false);
    assert.equal(ok.statusCode, 201, ok.body);
    const link = (ok.json().result as { front_file: string }).front_file;
    const rowsBefore = await clientsState(ctx.services.database.db);
    const filesBefore = await fileRows(ctx.services.database.db);

    s3.pause();
    try {
      const up = await upload();
      assert.equal(up.statusCode, 503);
      assert.deepEqual(up.json(), unavailableBody);
      const down = await download(link);
      assert.equal(down.statusCode, 503);
      assert.deepEqual(down.json(), unavailableBody);
      // The link is judged first: an altered one never reaches the bucket, and says nothing of it.
      const altered = await download(
        link.replace(/expires=([0-9]+)/, (_m, e: string) => `expires=${Number(e) + 1}`),
      );
      assert.equal(altered.statusCode, 404);
      assert.deepEqual(altered.json(), notFoundBody);
    } finally {
      s3.resume();
    }
    // Nothing was recorded. (Objects of the failed upload may land once the server reads what it
    // had queued; no row, so no link, names them: docs/operations.md, "Document storage".)
    assert.deepEqual(await clientsState(ctx.services.database.db), rowsBefore);
    assert.equal(await fileRows(ctx.services.database.db), filesBefore);

    const again = await download(link);
    assert.equal(again.statusCode, 200);
    assert.ok(again.rawPayload.equals(front));
    const later = await upload();
    assert.equal(later.statusCode, 201, later.body);
  });

  test("a file gone from the bucket is a 404, like any link that leads nowhere", async () => {
    const res = await upload(false);
    assert.equal(res.statusCode, 201, res.body);
    const link = (res.json().result as { front_file: string }).front_file;
    await s3.empty();
    const got = await download(link);
    assert.equal(got.statusCode, 404);
    assert.deepEqual(got.json(), notFoundBody);
  });
});
