// The console's record pages (docs/decisions.md, "Back office records"), through the admin
// listener with an operator's session: orders filtered and paged by keyset, an order's postings,
// the ledger page and its check on demand, a client's balances, orders and documents, a document's
// file (safe headers, every reading on the audit trail), and the audit trail's filters.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { insertClient, sampleFile, uploadDocument } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";

const password = "correct horse battery staple";

describe("the console's record pages", () => {
  let ctx: TestContext;
  let dataDir: string;
  let cookie: string;
  /** Order ids, oldest first: 50 deposits of client-1, then a withdrawal of client-1, a deposit of client-2. */
  const deposits: number[] = [];
  let withdrawal: number;
  let otherDeposit: number;
  let documentId: number;
  const png = sampleFile("png", 500);
  let refs = 0;

  const orderIds = (body: string) =>
    [...body.matchAll(/href="\/console\/orders\/(\d+)"/g)].map((m) => Number(m[1]));
  const page = (url: string, c = cookie) => ctx.admin.inject({ method: "GET", url, headers: { cookie: c } });
  const trailCount = async (action: string) =>
    (await ctx.adminRequest("GET", `/admin/audit?action=${action}`)).json().total as number;

  async function fund(kind: "deposits" | "withdrawals", client: string, amount: string): Promise<number> {
    const res = await ctx.signed({
      method: "POST",
      url: `/v1/partner/${kind}`,
      body: { partner_client_id: client, asset_id: "AED", amount, partner_order_ref: `ref-${++refs}` },
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().result.id;
  }

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cp-console-records-"));
    ctx = await startTestContext({ env: { DATA_DIR: dataDir } });
    const db = ctx.services.database.db;
    await insertClient(db, ctx.partner.id, 1);
    await insertClient(db, ctx.partner.id, 2);
    for (let i = 0; i < 50; i++) deposits.push(await fund("deposits", "client-1", "10"));
    withdrawal = await fund("withdrawals", "client-1", "3.5");
    otherDeposit = await fund("deposits", "client-2", "7");
    documentId = await uploadDocument(ctx, "client-1", "government_id", {
      filename: "f.png",
      contentType: "image/png",
      data: png,
    });
    const op = await ctx.adminRequest("POST", "/admin/operators", {
      email: "reader@broker.example",
      role: "viewer",
      password,
    });
    assert.equal(op.statusCode, 201, op.body);
    const signIn = await ctx.admin.inject({
      method: "POST",
      url: "/admin/session",
      payload: { email: "reader@broker.example", password },
    });
    assert.equal(signIn.statusCode, 200, signIn.body);
    cookie = String(signIn.headers["set-cookie"]).split(";")[0]!;
  });
  after(async () => {
    await ctx.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test("without a session every record page goes to the sign-in page", async () => {
    for (const url of [
      "/console/orders",
      `/console/orders/${withdrawal}`,
      "/console/ledger",
      `/console/documents/${documentId}/front`,
    ]) {
      const res = await page(url, "counterpart_session=nope");
      assert.equal(res.statusCode, 303, url);
      assert.equal(res.headers.location, "/console/sign-in");
    }
  });

  test("the console's address answers with or without its trailing slash", async () => {
    for (const url of ["/console", "/console/"]) {
      // Signed out (no cookie, or one that opens nothing): the sign-in page.
      for (const headers of [{}, { cookie: "counterpart_session=nope" }]) {
        const res = await ctx.admin.inject({ method: "GET", url, headers });
        assert.equal(res.statusCode, 303, `${url}: ${res.body}`);
        assert.equal(res.headers.location, "/console/sign-in");
      }
      // Signed in: the first page, which is HTML.
      const res = await page(url);
      assert.equal(res.statusCode, 303, `${url}: ${res.body}`);
      assert.equal(res.headers.location, "/console/clients");
      const landed = await page(String(res.headers.location));
      assert.equal(landed.statusCode, 200);
      assert.match(String(landed.headers["content-type"]), /^text\/html/);
    }
  });

  test("orders: newest first, 50 a page, the next page by keyset, and nothing twice", async () => {
    const first = await page("/console/orders");
    assert.equal(first.statusCode, 200);
    const ids1 = orderIds(first.body);
    assert.deepEqual(ids1, [otherDeposit, withdrawal, ...deposits.slice(2).reverse()]);
    const next = /href="([^"]*after_at=[^"]*)">Older/.exec(first.body);
    assert.ok(next !== null, "a link to the older page");
    const second = await page(next[1]!.replaceAll("&amp;", "&"));
    assert.equal(second.statusCode, 200);
    assert.deepEqual(orderIds(second.body), [deposits[1], deposits[0]]);
    assert.match(second.body, /No older entries\./);
  });

  test("orders: each filter narrows the list", async () => {
    const q = (query: Record<string, string>) => page(`/console/orders?${new URLSearchParams(query)}`);
    assert.deepEqual(orderIds((await q({ type: "withdrawal" })).body), [withdrawal]);
    assert.deepEqual(orderIds((await q({ partner: ctx.partner.id, client: "client-2" })).body), [
      otherDeposit,
    ]);
    assert.deepEqual(orderIds((await q({ partner: ctx.partner.id, client: "nobody" })).body), []);
    assert.equal(
      orderIds((await q({ partner: ctx.partner.id, source: "bank", status: "completed" })).body).length,
      50,
    );
    assert.deepEqual(orderIds((await q({ source: "card" })).body), []);
    assert.deepEqual(orderIds((await q({ from: "2100-01-01" })).body), []);
    assert.equal(orderIds((await q({ from: "2000-01-01", to: "2100-01-01T00:00:00Z" })).body).length, 50);
    const other = await ctx.addPartner();
    assert.deepEqual(orderIds((await q({ partner: other.id })).body), []);
  });

  test("orders: bad filters are a 400 page in our words, and list nothing", async () => {
    for (const [query, words] of [
      [{ from: "yesterday" }, "Created from/to should be a date"],
      [{ partner: "not-a-uuid" }, "The partner id is a UUID"],
      [{ client: "client-1" }, "A client id needs its partner id"],
      [{ after_at: "2026-01-01T00:00:00Z" }, "This page link is not valid"],
    ] as const) {
      const res = await page(`/console/orders?${new URLSearchParams(query)}`);
      assert.equal(res.statusCode, 400, JSON.stringify(query));
      assert.ok(res.body.includes(words), words);
      assert.deepEqual(orderIds(res.body), []);
    }
  });

  test("every console page: a filter it cannot read is the 400 page that says which, never the API's 422", async () => {
    const readsBefore = await trailCount("document.read");
    for (const [url, words] of [
      // Refused by the route's schema or by the checks every route's input gets, before the page's own.
      [
        "/console/orders?after_at=x&after_id=y",
        "This page link is not valid; start again from the newest orders.",
      ],
      ["/console/orders?after_id=1e3", "This page link is not valid"],
      ["/console/orders?status=%ff", "The filter “status” is not valid."],
      ["/console/orders?from=2026-01-01&from=2026-02-01", "The filter “from” is given more than once"],
      [`/console/orders?partner=${"a".repeat(65)}`, "The filter “partner” is not valid."],
      ["/console/orders?client=%00", "The filter “client” is not valid."],
      [
        "/console/audit?after_at=x&after_id=y",
        "This page link is not valid; start again from the newest entries.",
      ],
      ["/console/audit?action=%ff", "The filter “action” is not valid."],
      ["/console/audit?to=a&to=b", "The filter “to” is given more than once"],
      ["/console/clients?page=x", "The filter “page” is not valid."],
      ["/console/clients?status=verified&status=rejected", "The filter “status” is given more than once"],
      ["/console/ledger?check=1&check=1", "The filter “check” is given more than once"],
      ["/console/partners?x=%ff", "The filter “x” is not valid."],
      ["/console/catalog?x=%ff", "The filter “x” is not valid."],
      [`/console/orders/${withdrawal}?x=%ff`, "The filter “x” is not valid."],
      [`/console/clients/${ctx.partner.id}/client-1?x=%ff`, "The filter “x” is not valid."],
      [`/console/documents/${documentId}/front?x=%ff`, "The filter “x” is not valid."],
      ["/console/?x=%ff", "The filter “x” is not valid."],
    ] as const) {
      const res = await page(url);
      assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
      assert.match(String(res.headers["content-type"]), /^text\/html/, url);
      assert.equal(res.headers["cache-control"], "no-store", url);
      assert.ok(res.body.includes(`<p role="alert" class="error">${words}`), `${url}: ${words}`);
      assert.deepEqual(orderIds(res.body), [], url);
    }
    // A path value that names nothing is the page's 404, as an absent record is.
    for (const url of [
      "/console/orders/abc",
      "/console/orders/99999999999999999999999999999999999999",
      "/console/orders/%00",
      `/console/documents/${documentId}/left`,
      "/console/documents/x/front",
      "/console/documents/99999999999999999999999999999999999999/front",
    ]) {
      const res = await page(url);
      assert.equal(res.statusCode, 404, `${url}: ${res.body}`);
      assert.match(res.body, /No such record\./, url);
    }
    // No file was read, so no reading went on the trail.
    assert.equal(await trailCount("document.read"), readsBefore);
    // The sign-in page, read signed out, says so itself.
    const signIn = await ctx.admin.inject({ method: "GET", url: "/console/sign-in?x=%ff" });
    assert.equal(signIn.statusCode, 400, signIn.body);
    assert.ok(signIn.body.includes('<p role="alert" class="error">The filter “x” is not valid.'));
    // Without a session, the sign-in page, as for any page; the admin API keeps its JSON 422.
    const signedOut = await page("/console/orders?after_id=y", "counterpart_session=nope");
    assert.equal(signedOut.statusCode, 303);
    assert.equal(signedOut.headers.location, "/console/sign-in");
    const api = await ctx.adminRequest("GET", "/admin/orders?after_at=x&after_id=y");
    assert.equal(api.statusCode, 422, api.body);
    assert.equal(api.json().code, 422);
  });

  test("an order's page shows its legs as postings that sum to zero", async () => {
    const res = await page(`/console/orders/${withdrawal}`);
    assert.equal(res.statusCode, 200);
    const postings = /<table id="postings">([\s\S]*?)<\/table>/.exec(res.body)?.[1] ?? "";
    assert.match(postings, /client \d+<\/td><td>\d+<\/td><td>AED<\/td><td class="num">-3\.5<\/td>/);
    assert.match(postings, /omnibus slot \d+<\/td><td>\d+<\/td><td>AED<\/td><td class="num">3\.5<\/td>/);
    assert.equal((await page("/console/orders/999999")).statusCode, 404);
  });

  test("the ledger page shows totals and house accounts, and runs the check only when asked", async () => {
    const res = await page("/console/ledger");
    assert.equal(res.statusCode, 200);
    const totals = /<table id="totals">([\s\S]*?)<\/table>/.exec(res.body)?.[1] ?? "";
    // 500 deposited, 3.5 withdrawn, 7 deposited: clients hold 503.5 AED, the omnibus owes it.
    assert.match(
      totals,
      /<td>AED<\/td><td class="num">503\.5<\/td><td class="num">-503\.5<\/td><td class="num">0<\/td>/,
    );
    assert.match(res.body, /<table id="house">[\s\S]*omnibus<\/td><td>AED<\/td><td class="num">-503\.5</);
    assert.match(res.body, /Run the ledger check/);
    const checked = await page("/console/ledger?check=1");
    assert.match(checked.body, /The ledger is consistent/);
  });

  test("a client's page shows its balances, its latest orders and its documents", async () => {
    const res = await page(`/console/clients/${ctx.partner.id}/client-1`);
    assert.equal(res.statusCode, 200);
    assert.match(
      res.body,
      /<table id="balances">[\s\S]*<td>AED<\/td><td class="num">496\.5<\/td><td class="num">0<\/td><td class="num">496\.5<\/td>/,
    );
    const ids = orderIds(res.body);
    assert.deepEqual(ids, [withdrawal, ...deposits.slice(-19).reverse()]);
    assert.ok(res.body.includes("All of this client's orders"));
    assert.ok(res.body.includes(`<img src="/console/documents/${documentId}/front"`));
  });

  test("a document's file is served with safe headers, and its reading goes on the audit trail", async () => {
    const before = await trailCount("document.read");
    const res = await page(`/console/documents/${documentId}/front`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers["content-type"], "image/png");
    assert.equal(res.headers["x-content-type-options"], "nosniff");
    assert.equal(res.headers["cache-control"], "no-store");
    assert.match(String(res.headers["content-security-policy"]), /^sandbox;/);
    assert.deepEqual(res.rawPayload, png);
    assert.equal(await trailCount("document.read"), before + 1);
    const entry = (await ctx.adminRequest("GET", "/admin/audit?action=document.read")).json().items[0];
    assert.equal(entry.actor.email, "reader@broker.example");
    assert.equal(entry.target_id, `${ctx.partner.id}/client-1`);
    assert.deepEqual(entry.after, { document_id: documentId, side: "front" });
    // A side or a document that does not exist (or cannot: a side that is neither): 404, and
    // nothing recorded.
    assert.equal((await page(`/console/documents/${documentId}/back`)).statusCode, 404);
    assert.equal((await page("/console/documents/999999/front")).statusCode, 404);
    assert.equal((await page(`/console/documents/${documentId}/side`)).statusCode, 404);
    assert.equal(await trailCount("document.read"), before + 1);
  });

  test("the audit trail filters by actor, action, target and time, paged by keyset", async () => {
    // Readings of the document, each one entry of the reader's.
    for (let i = 0; i < 3; i++)
      assert.equal((await page(`/console/documents/${documentId}/front`)).statusCode, 200);
    const rows = (body: string) => [...body.matchAll(/<tr><td>\d{4}-/g)].length;
    const q = (query: Record<string, string>) => page(`/console/audit?${new URLSearchParams(query)}`);
    const byActor = await q({ actor: "reader@broker.example" });
    assert.equal(byActor.statusCode, 200);
    assert.ok(rows(byActor.body) >= 4);
    assert.equal(rows((await q({ actor: "someone@else.example" })).body), 0);
    assert.equal(rows((await q({ actor: "system", action: "document.read" })).body), 0);
    const byTarget = await q({
      target_type: "client",
      target: `${ctx.partner.id}/client-1`,
      action: "document.read",
    });
    assert.ok(rows(byTarget.body) >= 4);
    assert.equal(rows((await q({ action: "document.read", from: "2100-01-01" })).body), 0);
    assert.equal((await q({ to: "soon" })).statusCode, 400);
    assert.equal((await q({ actor: "bob" })).statusCode, 400);
    // Keyset paging across the trail: the reader's readings, 50 a page; make a second page.
    for (let i = 0; i < 47; i++) await page(`/console/documents/${documentId}/front`);
    const first = await q({ action: "document.read" });
    assert.equal(rows(first.body), 50);
    const next = /href="([^"]*after_at=[^"]*)">Older/.exec(first.body);
    assert.ok(next !== null);
    const second = await page(next[1]!.replaceAll("&amp;", "&"));
    assert.equal(rows(second.body), (await trailCount("document.read")) - 50);
  });

  test("the admin API lists the same orders by keyset, and shows one with its postings", async () => {
    const list = async (query: string) => {
      const res = await ctx.adminRequest("GET", `/admin/orders?${query}`);
      assert.equal(res.statusCode, 200, res.body);
      return res.json() as { items: { id: number }[]; next: { after_at: string; after_id: number } | null };
    };
    assert.deepEqual(
      (await list("type=withdrawal")).items.map((o) => o.id),
      [withdrawal],
    );
    assert.deepEqual(
      (await list(`partner_id=${ctx.partner.id}&partner_client_id=client-2`)).items.map((o) => o.id),
      [otherDeposit],
    );
    // Every order once, 20 a page, by following `next`.
    const seen: number[] = [];
    let query = "page_size=20";
    for (;;) {
      const page = await list(query);
      seen.push(...page.items.map((o) => o.id));
      if (page.next === null) break;
      query = `page_size=20&${new URLSearchParams({ after_at: page.next.after_at, after_id: String(page.next.after_id) })}`;
    }
    assert.deepEqual(seen, [otherDeposit, withdrawal, ...[...deposits].reverse()]);
    const one = await ctx.adminRequest("GET", `/admin/orders/${withdrawal}`);
    assert.equal(one.statusCode, 200, one.body);
    const { order, postings } = one.json().result;
    assert.equal(order.credit, "3.5");
    assert.deepEqual(
      postings.map((p: { amount: string }) => p.amount),
      ["-3.5", "3.5"],
    );
    assert.equal((await ctx.adminRequest("GET", "/admin/orders/999999")).statusCode, 404);
    for (const bad of [
      "partner_client_id=client-1",
      "after_id=3",
      "partner_id=nope",
      "status=lost",
      "from=soon",
    ]) {
      const res = await ctx.adminRequest("GET", `/admin/orders?${bad}`);
      assert.equal(res.statusCode, 422, bad);
    }
    // A viewer's session may read them too.
    const viewed = await ctx.admin.inject({
      method: "GET",
      url: "/admin/orders?type=withdrawal",
      headers: { cookie },
    });
    assert.equal(viewed.statusCode, 200);
  });
});
