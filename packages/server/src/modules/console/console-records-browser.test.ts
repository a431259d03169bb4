// The console's record pages in headless Chromium (Debian's chromium driven by playwright-core):
// an operator looks an order up by its filters and opens it to see its postings, runs the ledger
// check, sees a client's balances, orders and documents (the image shown in the page; a PDF in a
// frame), and filters the audit trail down to that document's reading. With CONSOLE_SCREENSHOTS=DIR the pages
// are saved there as PNG (docs/console/), with the values that change from run to run (the
// partner's id, the orders' times) written over by fixed ones first, so the pictures are the same
// on every run.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { type ConsoleBrowser, openConsoleBrowser } from "../../testing/console-browser.ts";
import { insertClient, sampleFile, uploadDocument } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";

const screenshots = process.env.CONSOLE_SCREENSHOTS ?? null;

describe("the console's record pages in a browser", () => {
  let ctx: TestContext;
  let dataDir: string;
  let consoleBrowser: ConsoleBrowser;
  let base: string;
  let page: Page;
  let withdrawal: number;
  let refs = 0;

  async function fund(kind: "deposits" | "withdrawals", client: string, amount: string): Promise<number> {
    const res = await ctx.signed({
      method: "POST",
      url: `/v1/partner/${kind}`,
      body: { partner_client_id: client, asset_id: "AED", amount, partner_order_ref: `ref-${++refs}` },
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().result.id;
  }

  /** Writes fixed values over the ones that change from run to run, then saves the page. */
  async function shot(name: string): Promise<void> {
    if (screenshots === null) return;
    await page.evaluate(`(() => {
      const partner = ${JSON.stringify(ctx.partner.id)};
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n !== null; n = walker.nextNode()) {
        n.nodeValue = n.nodeValue
          .replaceAll(partner, "3f2b8c1e-7a4d-4e9b-9c21-5d6e7f8a9b0c")
          .replace(/20\\d\\d-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{6}Z/g, (t) =>
            t.startsWith("2026-11-21T09:") ? t : "2026-11-21T09:45:00.000000Z")
          .replace(/checked in \\d+ ms/, "checked in 12 ms");
      }
      for (const input of document.querySelectorAll("input")) {
        if (input.value === partner) input.value = "3f2b8c1e-7a4d-4e9b-9c21-5d6e7f8a9b0c";
      }
    })()`);
    await page.screenshot({ path: path.join(screenshots, name), fullPage: true });
  }

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cp-console-records-browser-"));
    ctx = await startTestContext({ env: { DATA_DIR: dataDir } });
    const db = ctx.services.database.db;
    await insertClient(db, ctx.partner.id, 1);
    await insertClient(db, ctx.partner.id, 2);
    for (const amount of ["100", "250", "40"]) await fund("deposits", "client-1", amount);
    withdrawal = await fund("withdrawals", "client-1", "35.5");
    await fund("deposits", "client-2", "75");
    await uploadDocument(ctx, "client-1", "government_id", {
      filename: "f.png",
      contentType: "image/png",
      data: sampleFile("png", 500),
    });
    consoleBrowser = await openConsoleBrowser(ctx, [["officer@broker.example", "compliance"]]);
    base = consoleBrowser.base;
    page = await consoleBrowser.signIn("officer@broker.example");
  });
  after(async () => {
    await consoleBrowser?.close();
    await ctx.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test("an order is looked up by its filters and opened to show its postings", async () => {
    await page.getByRole("link", { name: "Orders", exact: true }).click();
    await page.waitForURL(`${base}/console/orders`);
    assert.equal(await page.locator("tbody tr").count(), 5);
    await shot("orders.png");
    await page.getByLabel("Type").selectOption("withdrawal");
    await page.getByLabel("Partner id").fill(ctx.partner.id);
    await page.getByLabel("Client id (with the partner)").fill("client-1");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/type=withdrawal/);
    assert.equal(await page.locator("tbody tr").count(), 1);
    await page.getByRole("link", { name: String(withdrawal), exact: true }).click();
    await page.waitForURL(`${base}/console/orders/${withdrawal}`);
    const postings = await page.locator("#postings tbody").innerText();
    assert.match(postings, /client \d+\s+\d+\s+AED\s+-35\.5/);
    assert.match(postings, /omnibus slot \d+\s+\d+\s+AED\s+35\.5/);
    await shot("order.png");
  });

  test("the ledger page runs the check on demand and shows the totals", async () => {
    await page.getByRole("link", { name: "Ledger", exact: true }).click();
    await page.waitForURL(`${base}/console/ledger`);
    assert.match(await page.locator("#totals tbody").innerText(), /AED\s+429\.5\s+-429\.5\s+0/);
    await page.getByRole("button", { name: "Run the ledger check" }).click();
    await page.getByText("The ledger is consistent").waitFor();
    await shot("ledger.png");
  });

  test("a client's page shows its balances, orders and its document's image", async () => {
    await page.getByRole("link", { name: "Clients", exact: true }).click();
    await page.waitForURL(`${base}/console/clients`);
    await shot("clients.png");
    await page.getByRole("link", { name: "client-1", exact: true }).click();
    await page.waitForURL(`${base}/console/clients/${ctx.partner.id}/client-1`);
    assert.match(await page.locator("#balances tbody").innerText(), /AED\s+354\.5\s+0\s+354\.5/);
    assert.equal(await page.locator("main table").nth(2).locator("tbody tr").count(), 4);
    const image = page.getByRole("img", { name: /front of document \d+/ });
    await image.waitFor();
    // Shown, not blocked: the page's policy allows images from the console's own origin.
    // A function, not a string: the page's policy forbids eval, which a string predicate needs.
    const shown = await page.locator(".doc img").elementHandle();
    await page.waitForFunction((i) => i.complete && i.naturalWidth > 0, shown);
    await shot("client.png");
  });

  test("the audit trail is filtered down to the document's reading", async () => {
    await page.getByRole("link", { name: "Audit trail" }).click();
    await page.waitForURL(`${base}/console/audit`);
    await page.getByLabel("Action").fill("document.read");
    await page.getByLabel("Actor (operator e-mail, token or system)").fill("officer@broker.example");
    await page.keyboard.press("Enter");
    await page.waitForURL(/action=document\.read/);
    const rows = page.locator("tbody tr");
    assert.equal(await rows.count(), 1);
    assert.match(await rows.first().innerText(), /officer@broker\.example\s+document\.read\s+client:/);
    await shot("audit.png");
  });

  // Last: reading the document adds to the audit trail the test above counts.
  test("a client's PDF document is shown in a frame of the console's own origin, not refused", async () => {
    const documentId = await uploadDocument(ctx, "client-2", "bank_statement", {
      filename: "s.pdf",
      contentType: "application/pdf",
      data: sampleFile("pdf", 600),
    });
    const fileUrl = `${base}/console/documents/${documentId}/front`;
    // What the browser says when a policy refuses a frame (X-Frame-Options, frame-ancestors,
    // frame-src) or the frame's content: none of it may appear.
    const refusals: string[] = [];
    const onConsole = (m: { text(): string }) => {
      if (/refused|content security policy|blocked/i.test(m.text())) refusals.push(m.text());
    };
    page.on("console", onConsole);
    try {
      const loaded = page.waitForResponse((r) => r.url() === fileUrl, { timeout: 10_000 });
      await page.goto(`${base}/console/clients/${ctx.partner.id}/client-2`);
      const frame = page.locator(`iframe[title="front of document ${documentId}"]`);
      await frame.scrollIntoViewIfNeeded();
      const response = await loaded;
      assert.equal(response.status(), 200);
      const headers = await response.allHeaders();
      assert.equal(headers["content-type"], "application/pdf");
      assert.equal(headers["x-content-type-options"], "nosniff");
      assert.equal(headers["x-frame-options"], "SAMEORIGIN");
      assert.match(headers["content-security-policy"] ?? "", /^sandbox;/);
      // Taken by Chromium's PDF viewer: what the frame holds is the viewer's own page, which
      // embeds the file as application/pdf (a refused or unreadable file would show an error page).
      assert.match((await response.body()).toString("latin1"), /type="application\/pdf"/);
      // The frame went to the file itself, not to an error page of the browser's.
      const framed = page.frames().find((f) => f.url() === fileUrl);
      assert.ok(framed, `no frame at ${fileUrl}: ${page.frames().map((f) => f.url())}`);
      assert.equal(
        await page.getByRole("link", { name: `Open the front of document ${documentId}` }).count(),
        1,
      );
      assert.deepEqual(refusals, []);
    } finally {
      page.off("console", onConsole);
    }
  });
});
