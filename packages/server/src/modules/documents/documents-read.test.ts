// Reading documents (docs/decisions.md, "Documents"): 900-second signed links, the list with its
// type filter and pages, one document, 404 for another client's, page bounds, isolation between
// partners; links signed by the service, served without partner headers, refused when expired or
// altered.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { limits } from "../../config/limits.ts";
import { clientPayload, multipartBody, sampleFile } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext, type TestPartner } from "../../testing/harness.ts";

interface Doc {
  id: number;
  type: string;
  front_file: string;
  back_file: string | null;
  created_at: string;
}

describe("reading documents and their links", () => {
  let ctx: TestContext;
  let dataDir: string;
  let stranger: TestPartner;
  /** Client 1's documents in upload order. */
  const docs: Doc[] = [];
  const types = [
    "government_id",
    "proof_of_address",
    "government_id",
    "bank_statement",
    "source_of_funds",
    "inquiry_report",
    "residency_visa",
    "government_id",
    "proof_of_address",
    "bank_statement",
    "government_id",
    "source_of_funds",
  ];

  const docsUrl = (pcid: string) => `/v1/partner/clients/${encodeURIComponent(pcid)}/documents`;

  async function upload(pcid: string, type: string, partner?: TestPartner, withBack = false): Promise<Doc> {
    const { body, contentType } = multipartBody([
      { name: "type", data: type },
      { name: "front_file", filename: "f.png", contentType: "image/png", data: sampleFile("png", 500) },
      ...(withBack ? [{ name: "back_file", filename: "b.pdf", data: sampleFile("pdf", 700) }] : []),
    ]);
    const res = await ctx.signed({
      method: "POST",
      url: docsUrl(pcid),
      body,
      headers: { "content-type": contentType },
      ...(partner ? { partner } : {}),
    });
    assert.equal(res.statusCode, 201, res.body);
    return res.json().result;
  }

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cp-documents-read-"));
    ctx = await startTestContext({ env: { DATA_DIR: dataDir } });
    stranger = await ctx.addPartner();
    for (const k of [1, 2]) {
      const res = await ctx.signed({ method: "POST", url: "/v1/partner/clients", body: clientPayload(k) });
      assert.equal(res.statusCode, 201, res.body);
    }
    // The stranger has a client with the same partner_client_id: ids are per partner.
    const mirror = await ctx.signed({
      method: "POST",
      url: "/v1/partner/clients",
      body: clientPayload(1),
      partner: stranger,
    });
    assert.equal(mirror.statusCode, 201, mirror.body);
    for (const [i, type] of types.entries()) {
      ctx.clock.advance(1_000);
      docs.push(await upload("client-1", type, undefined, i === 0));
    }
    await upload("client-2", "government_id");
  });
  after(async () => {
    await ctx.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  async function list(pcid: string, query = "", partner?: TestPartner) {
    const res = await ctx.signed({
      method: "GET",
      url: `${docsUrl(pcid)}${query}`,
      ...(partner ? { partner } : {}),
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { items: Doc[]; total: number; page: number; page_size: number };
  }
  const newestFirst = () => [...docs].reverse().map((d) => d.id);

  function download(link: string, headers: Record<string, string> = {}) {
    const u = new URL(link);
    return ctx.app.inject({ method: "GET", url: `${u.pathname}${u.search}`, headers });
  }

  test("the list: newest first, 10 a page by default, total of all matches; items as uploaded", async () => {
    const first = await list("client-1");
    assert.equal(first.total, 12);
    assert.equal(first.page, 1);
    assert.equal(first.page_size, 10);
    assert.deepEqual(
      first.items.map((d) => d.id),
      newestFirst().slice(0, 10),
    );
    const second = await list("client-1", "?page=2");
    assert.deepEqual(
      second.items.map((d) => d.id),
      newestFirst().slice(10),
    );
    assert.deepEqual((await list("client-1", "?page=3")).items, []);
    const all = await list("client-1", "?page_size=100");
    const oldest = all.items.at(-1)!;
    assert.deepEqual(
      { ...oldest, front_file: "", back_file: "" },
      { ...docs[0]!, front_file: "", back_file: "" },
    );
    assert.notEqual(oldest.back_file, null);
    assert.equal(all.items[0]!.back_file, null);
  });

  test("type filter, repeatable; a client without documents has an empty list", async () => {
    const ids = (t: string[]) =>
      [...docs]
        .reverse()
        .filter((d) => t.includes(d.type))
        .map((d) => d.id);
    const gov = await list("client-1", "?type=government_id");
    assert.equal(gov.total, 4);
    assert.deepEqual(
      gov.items.map((d) => d.id),
      ids(["government_id"]),
    );
    const two = await list("client-1", "?type=bank_statement&type=inquiry_report&page_size=2");
    assert.equal(two.total, 3);
    assert.deepEqual(
      two.items.map((d) => d.id),
      ids(["bank_statement", "inquiry_report"]).slice(0, 2),
    );
    const res = await ctx.signed({ method: "POST", url: "/v1/partner/clients", body: clientPayload(3) });
    assert.equal(res.statusCode, 201);
    assert.deepEqual(await list("client-3"), { items: [], total: 0, page: 1, page_size: 10 });
  });

  test("bad type, page or page_size: 422 at [query, name]", async () => {
    for (const [query, loc, type] of [
      ["type=passport", ["query", "type", 0], "enum"],
      ["page=0", ["query", "page"], "greater_than_equal"],
      ["page=x", ["query", "page"], "int_parsing"],
      ["page_size=0", ["query", "page_size"], "greater_than_equal"],
      ["page_size=101", ["query", "page_size"], "less_than_equal"],
    ] as const) {
      const res = await ctx.signed({ method: "GET", url: `${docsUrl("client-1")}?${query}` });
      assert.equal(res.statusCode, 422, query);
      assert.deepEqual(
        res.json().msg_detail.map((d: { loc: unknown; type: string }) => [d.loc, d.type]),
        [[loc, type]],
      );
    }
    assert.equal((await list("client-1", "?page_size=100")).page_size, limits.pageSizeMax);
  });

  test("one document: 200 {result}; 404 when absent, of another client, or not an id; 2008 for an unknown client", async () => {
    const doc = docs[0]!;
    const res = await ctx.signed({ method: "GET", url: `${docsUrl("client-1")}/${doc.id}` });
    assert.equal(res.statusCode, 200);
    const got = res.json().result as Doc;
    assert.deepEqual({ ...got, front_file: "", back_file: "" }, { ...doc, front_file: "", back_file: "" });
    assert.equal(new URL(got.front_file).pathname, new URL(doc.front_file).pathname);
    for (const id of [String(docs.at(-1)!.id + 1000), "0", "-1", "abc", "1.5", "99999999999999999999"]) {
      const absent = await ctx.signed({ method: "GET", url: `${docsUrl("client-1")}/${id}` });
      assert.equal(absent.statusCode, 404, id);
      assert.deepEqual(absent.json(), { code: 404, msg: "Not Found", msg_detail: null });
    }
    const otherClient = await ctx.signed({ method: "GET", url: `${docsUrl("client-2")}/${doc.id}` });
    assert.equal(otherClient.statusCode, 404);
    const unknown = await ctx.signed({ method: "GET", url: `${docsUrl("nobody")}/${doc.id}` });
    assert.equal(unknown.json().code, 2008);
    const unknownList = await ctx.signed({ method: "GET", url: docsUrl("nobody") });
    assert.equal(unknownList.json().code, 2008);
  });

  test("isolation: another partner sees none of these documents, even through a client of the same id", async () => {
    const theirs = await list("client-1", "", stranger);
    assert.deepEqual(theirs, { items: [], total: 0, page: 1, page_size: 10 });
    for (const doc of docs) {
      const res = await ctx.signed({
        method: "GET",
        url: `${docsUrl("client-1")}/${doc.id}`,
        partner: stranger,
      });
      assert.equal(res.statusCode, 404);
    }
    const mine = await upload("client-1", "government_id", stranger);
    assert.equal((await list("client-1", "", stranger)).total, 1);
    const cross = await ctx.signed({ method: "GET", url: `${docsUrl("client-1")}/${mine.id}` });
    assert.equal(cross.statusCode, 404);
    const unknown = await ctx.signed({ method: "GET", url: docsUrl("client-2"), partner: stranger });
    assert.equal(unknown.json().code, 2008);
  });

  test("links need no partner headers, ignore them if sent, and point at the host the partner called", async () => {
    const res = await ctx.signed({
      method: "GET",
      url: `${docsUrl("client-1")}/${docs[0]!.id}`,
      headers: { host: "api.partner-test.example:8443" },
    });
    const doc = res.json().result as Doc;
    assert.ok(doc.front_file.startsWith("http://api.partner-test.example:8443/v1/files/"), doc.front_file);
    const plain = await download(doc.front_file);
    assert.equal(plain.statusCode, 200);
    assert.ok(plain.rawPayload.equals(sampleFile("png", 500)));
    const noisy = await download(doc.front_file, {
      "x-partner-id": "junk",
      "x-signature": "!!",
      "x-timestamp": "1",
    });
    assert.equal(noisy.statusCode, 200);
    const back = await download(doc.back_file!);
    assert.equal(back.headers["content-type"], "application/pdf");
    // X-Forwarded-* are believed only from a trusted proxy (none here).
    const forwarded = await ctx.signed({
      method: "GET",
      url: `${docsUrl("client-1")}/${docs[0]!.id}`,
      headers: { "x-forwarded-host": "evil.example", "x-forwarded-proto": "https" },
    });
    assert.ok(forwarded.json().result.front_file.startsWith("http://localhost:80/"));
  });

  test("a link is valid for 900 seconds from issue, judged on the injected clock, then 404", async () => {
    // Issue on a whole second, so that the lifetime is exactly 900 s.
    ctx.clock.set(Math.ceil(ctx.clock.nowMs() / 1000) * 1000 + 999);
    const res = await ctx.signed({ method: "GET", url: `${docsUrl("client-1")}/${docs[1]!.id}` });
    const issued = ctx.clock.nowMs();
    assert.equal(issued % 1000, 0);
    const link = res.json().result.front_file as string;
    assert.equal(
      Number(new URL(link).searchParams.get("expires")),
      issued / 1000 + limits.fileUrlLifetimeSeconds,
    );
    ctx.clock.set(issued + limits.fileUrlLifetimeSeconds * 1000);
    assert.equal((await download(link)).statusCode, 200);
    ctx.clock.set(issued + limits.fileUrlLifetimeSeconds * 1000 + 1);
    const expired = await download(link);
    assert.equal(expired.statusCode, 404);
    assert.deepEqual(expired.json(), { code: 404, msg: "Not Found", msg_detail: null });
    // Asking again gives a fresh link.
    const again = await ctx.signed({ method: "GET", url: `${docsUrl("client-1")}/${docs[1]!.id}` });
    assert.equal((await download(again.json().result.front_file)).statusCode, 200);
  });

  test("an altered link is a 404: key, expiry, signature, or parts missing", async () => {
    const res = await ctx.signed({ method: "GET", url: `${docsUrl("client-1")}/${docs[0]!.id}` });
    const doc = res.json().result as Doc;
    const front = new URL(doc.front_file);
    const back = new URL(doc.back_file!);
    const key = front.pathname.split("/").at(-1)!;
    const expires = front.searchParams.get("expires")!;
    const signature = front.searchParams.get("signature")!;
    const flip = (s: string) => (s[0] === "A" ? `B${s.slice(1)}` : `A${s.slice(1)}`);
    const altered = [
      `/v1/files/${flip(key)}?expires=${expires}&signature=${signature}`,
      `/v1/files/${back.pathname.split("/").at(-1)}?expires=${expires}&signature=${signature}`,
      `/v1/files/${key}?expires=${Number(expires) + 3600}&signature=${signature}`,
      `/v1/files/${key}?expires=${expires}&signature=${flip(signature)}`,
      `/v1/files/${key}?expires=${expires}&signature=${signature.slice(0, -1)}`,
      `/v1/files/${key}?expires=${expires}&signature=${signature}A`,
      `/v1/files/${key}?expires=${expires}`,
      `/v1/files/${key}?signature=${signature}`,
      `/v1/files/${key}`,
      `/v1/files/${key}?expires=${expires}&signature=${signature}&signature=${signature}`,
      `/v1/files/..%2F..%2Fetc%2Fpasswd?expires=${expires}&signature=${signature}`,
      `/v1/files/${key}.png?expires=${expires}&signature=${signature}`,
    ];
    for (const url of altered) {
      const r = await ctx.app.inject({ method: "GET", url });
      assert.equal(r.statusCode, 404, url);
      assert.deepEqual(r.json(), { code: 404, msg: "Not Found", msg_detail: null });
    }
    assert.equal(
      (await ctx.app.inject({ method: "GET", url: `${front.pathname}${front.search}` })).statusCode,
      200,
    );
    const post = await ctx.app.inject({ method: "POST", url: `${front.pathname}${front.search}` });
    assert.equal(post.statusCode, 405);
  });

  test("a link to a file the store lost is a 404, not a 500", async () => {
    const doc = await upload("client-2", "bank_statement");
    const key = new URL(doc.front_file).pathname.split("/").at(-1)!;
    await ctx.services.fileStore.delete(key);
    const r = await download(doc.front_file);
    assert.equal(r.statusCode, 404);
  });
});
