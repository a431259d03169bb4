// The console's partner and catalog pages in headless Chromium (Debian's chromium driven by
// playwright-core): an admin creates a partner, adds a key, replaces its allow-list and disables it
// with a reason; pins a pair's price with a reason and hands it back to the feed, and sees both on
// the pair's history and the audit trail. A viewer and a compliance officer see the same pages
// without forms, and the API refuses (403, nothing changed) the change they send anyway.
// With CONSOLE_SCREENSHOTS=DIR the pages are saved there as PNG at 1280 px (docs/console/).

import assert from "node:assert/strict";
import crypto from "node:crypto";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { type ConsoleBrowser, openConsoleBrowser } from "../../testing/console-browser.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";

const screenshots = process.env.CONSOLE_SCREENSHOTS ?? null;

function publicKeyPem(): string {
  return crypto.generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "pem" }).toString();
}

describe("the console's partner and catalog pages in a browser", () => {
  let ctx: TestContext;
  let consoleBrowser: ConsoleBrowser;
  let base: string;

  before(async () => {
    // A feed that exists (to resume to) but does not tick by itself: the test never waits on it.
    ctx = await startTestContext({ env: { PRICE_FEED: "simulated" } });
    consoleBrowser = await openConsoleBrowser(ctx, [
      ["boss@broker.example", "admin"],
      ["officer@broker.example", "compliance"],
      ["reader@broker.example", "viewer"],
    ]);
    base = consoleBrowser.base;
  });
  after(async () => {
    await consoleBrowser?.close();
    await ctx.close();
  });

  const signedIn = (email: string): Promise<Page> => consoleBrowser.signIn(email, { width: 1280 });

  const shot = async (page: Page, name: string) => {
    if (screenshots !== null) await page.screenshot({ path: path.join(screenshots, name), fullPage: true });
  };

  /** Whether the page scrolls sideways at its width (it should not at 1280 px). */
  const overflows = (page: Page) =>
    page.evaluate("document.documentElement.scrollWidth > document.documentElement.clientWidth");

  test("an admin creates a partner, adds a key, replaces its allow-list and disables it with a reason", async () => {
    const page = await signedIn("boss@broker.example");
    await page.getByRole("link", { name: "Partners" }).click();
    await page.waitForURL(`${base}/console/partners`);

    // Keyboard only: the name field, then Tab through the form's fields in order, then submit.
    await page.getByLabel("Name").focus();
    await page.keyboard.type("Gulf Wallet");
    await page.keyboard.press("Tab");
    assert.equal(
      await page.evaluate("document.activeElement.name"),
      "allowed_ips",
      "the allow-list follows the name",
    );
    await page.keyboard.type("203.0.113.0/24");
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate("document.activeElement.name"), "public_key_pem");
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/console\/partners\/[0-9a-f-]{36}$/);
    const partnerId = page.url().split("/").pop() ?? "";
    await page.getByRole("heading", { name: "Partner Gulf Wallet" }).waitFor();

    const shown = (await ctx.adminRequest("GET", `/admin/partners/${partnerId}`)).json().result;
    assert.deepEqual(
      [shown.name, shown.active, shown.allowed_ips],
      ["Gulf Wallet", true, ["203.0.113.0/24"]],
    );

    // A key with a label.
    await page.getByLabel("Label").fill("primary 2026");
    await page.getByLabel("Ed25519 public key, PEM").fill(publicKeyPem());
    await page.getByRole("button", { name: "Add key" }).click();
    await page.getByRole("cell", { name: "primary 2026", exact: true }).waitFor();
    const keys = (await ctx.adminRequest("GET", `/admin/partners/${partnerId}/keys`)).json().items;
    assert.deepEqual(
      keys.map((k: { label: string; active: boolean }) => [k.label, k.active]),
      [["primary 2026", true]],
    );

    // A key that is not one: the error shows in the form, nothing added.
    await page.getByLabel("Label").fill("broken");
    await page.getByLabel("Ed25519 public key, PEM").fill("not a key");
    await page.getByRole("button", { name: "Add key" }).click();
    await page.getByText("not a PEM SubjectPublicKeyInfo block").waitFor();
    assert.equal((await ctx.adminRequest("GET", `/admin/partners/${partnerId}/keys`)).json().items.length, 1);

    // The allow-list replaced; emptied, it is shown as what it is: it admits nobody.
    const allowList = page.getByLabel(
      "Allowed IP addresses or CIDR ranges (one a line; an empty list admits nobody)",
    );
    await allowList.fill("");
    await page.getByRole("button", { name: "Replace allow-list" }).click();
    await page.getByRole("row", { name: "Allowed IPs none: every signed request is refused" }).waitFor();
    assert.deepEqual(
      (await ctx.adminRequest("GET", `/admin/partners/${partnerId}`)).json().result.allowed_ips,
      [],
    );
    await allowList.fill("198.51.100.7\n2001:db8::/32");
    await page.getByRole("button", { name: "Replace allow-list" }).click();
    await page.getByRole("row", { name: /^Allowed IPs 198\.51\.100\.7, 2001:db8::\/32$/ }).waitFor();

    // Budgets: one set, the others left to the default.
    await page.getByLabel("writes a minute").fill("42");
    await page.getByRole("button", { name: "Set budgets" }).click();
    await page.getByRole("row", { name: "Budget: writes 42 a minute" }).waitFor();

    // Fees and VAT.
    await page.getByLabel("Default fee rate (0 to 1; empty: each pair's own)").fill("0.004");
    await page.getByLabel("VAT percentage (empty: none)").fill("5");
    await page.getByRole("button", { name: "Set fees" }).click();
    await page.getByRole("row", { name: /^VAT percentage 5/ }).waitFor();

    // One pair made unavailable to this partner.
    await page.locator('select[name="pair_id"]').selectOption("ETH-AED");
    await page.getByLabel("available", { exact: true }).uncheck();
    await page.getByRole("button", { name: "Set pair" }).click();
    await page.locator("#partner-pairs").getByRole("row", { name: "ETH-AED no — (default)" }).waitFor();

    // Disabled with a reason: the browser will not send it without one.
    await page.getByRole("button", { name: "Disable partner" }).click();
    assert.equal((await ctx.adminRequest("GET", `/admin/partners/${partnerId}`)).json().result.active, true);
    await page.getByLabel("Reason (on the audit trail)").fill("contract ended");
    await page.getByRole("button", { name: "Disable partner" }).click();
    await page.getByRole("button", { name: "Enable partner" }).waitFor();
    await page.getByRole("cell", { name: "contract ended", exact: true }).waitFor();
    assert.equal(await overflows(page), false);
    await shot(page, "partner.png");

    assert.equal((await ctx.adminRequest("GET", `/admin/partners/${partnerId}`)).json().result.active, false);
    const trail = (await ctx.adminRequest("GET", `/admin/audit?target_id=${partnerId}`)).json();
    const actions = trail.items.map((e: { action: string }) => e.action).sort();
    assert.deepEqual(actions, [
      "partner.active",
      // Emptied, then replaced.
      "partner.allowed_ips",
      "partner.allowed_ips",
      "partner.create",
      "partner.fees",
      "partner.key_add",
      "partner.limits",
      "partner.pair_settings",
    ]);
    for (const e of trail.items) assert.equal(e.actor.email, "boss@broker.example");

    // The key retired from its row.
    await page.getByRole("button", { name: "Retire key primary 2026" }).click();
    await page.getByRole("cell", { name: "retired", exact: true }).waitFor();

    await page.getByRole("link", { name: "Partners" }).click();
    await page.getByRole("link", { name: "Gulf Wallet" }).waitFor();
    assert.equal(await overflows(page), false);
    await shot(page, "partners.png");
    await page.context().close();
  });

  test("an admin pins a price with a reason and hands it back to the feed, both on the trail", async () => {
    const page = await signedIn("boss@broker.example");
    await page.getByRole("link", { name: "Catalog" }).click();
    await page.waitForURL(`${base}/console/catalog`);

    // A new asset, then a pair of it: the pair's page follows, pinned until priced.
    await page.getByLabel("Asset id").fill("DOGE");
    await page.getByLabel("English name").fill("Dogecoin");
    await page.getByLabel("published", { exact: true }).check();
    await page.getByRole("button", { name: "Save asset" }).click();
    await page.getByRole("cell", { name: "Dogecoin", exact: true }).waitFor();
    assert.equal((await ctx.services.catalog.getAsset("DOGE"))?.published, true);
    await page.getByLabel("Pair id (BASE-QUOTE)").fill("DOGE-USD");
    await page.getByLabel("Quote lifetime (s)").fill("30");
    await page.getByRole("button", { name: "Add pair" }).click();
    await page.waitForURL(`${base}/console/pairs/DOGE-USD`);
    const created = await ctx.services.tradingAdmin.showPair("DOGE-USD");
    assert.deepEqual([created?.lifetime_s, created?.price_pinned], [30, true]);

    await page.getByRole("link", { name: "Catalog" }).click();
    await page.waitForURL(`${base}/console/catalog`);
    assert.equal(await overflows(page), false);
    await shot(page, "catalog.png");
    await page.getByRole("link", { name: "BTC-AED" }).click();
    await page.waitForURL(`${base}/console/pairs/BTC-AED`);

    await page.getByLabel("Buy").fill("250000");
    await page.getByLabel("Sell").fill("249000");
    // No reason: the browser refuses to send it; the pair is unchanged.
    const unpinned = await ctx.services.tradingAdmin.showPair("BTC-AED");
    await page.getByRole("button", { name: "Pin price" }).click();
    assert.deepEqual(await ctx.services.tradingAdmin.showPair("BTC-AED"), unpinned);
    await page.getByLabel("Reason (on the audit trail)").fill("exchange outage");
    await page.getByRole("button", { name: "Pin price" }).click();
    await page.getByRole("row", { name: "Price from pinned by an operator" }).waitFor();
    await page.getByRole("cell", { name: "exchange outage", exact: true }).waitFor();
    await shot(page, "prices.png");

    await page.getByRole("button", { name: "Resume feed" }).click();
    await page.getByRole("row", { name: "Price from the feed" }).waitFor();
    await page.getByRole("row", { name: /^Feed's last tick buy / }).waitFor();
    const history = await page.locator("table").last().innerText();
    assert.match(history, /boss@broker\.example\s+pair\.price_resume/);
    assert.match(history, /boss@broker\.example\s+pair\.price_pin\s+pair:BTC-AED\s+exchange outage/);

    const trail = (await ctx.adminRequest("GET", "/admin/audit?target_id=BTC-AED")).json();
    assert.deepEqual(
      trail.items.map((e: { action: string; reason: string | null }) => [e.action, e.reason]),
      [
        ["pair.price_resume", null],
        ["pair.price_pin", "exchange outage"],
      ],
    );
    await page.context().close();
  });

  test("without a session the pages go to the sign-in page; an unknown partner or pair is a 404 page", async () => {
    for (const url of [
      "/console/partners",
      `/console/partners/${ctx.partner.id}`,
      "/console/catalog",
      "/console/pairs/BTC-AED",
    ]) {
      const res = await fetch(`${base}${url}`, { redirect: "manual" });
      assert.equal(res.status, 303, url);
      assert.equal(res.headers.get("location"), "/console/sign-in");
    }
    const page = await signedIn("reader@broker.example");
    for (const url of [
      "/console/partners/00000000-0000-4000-8000-000000000000",
      "/console/partners/not-a-uuid",
      "/console/pairs/NOPE-AED",
    ]) {
      const res = await page.goto(`${base}${url}`);
      assert.equal(res?.status(), 404, url);
      await page.getByText("No such record.").waitFor();
    }
    await page.context().close();
  });

  for (const [email, role] of [
    ["reader@broker.example", "viewer"],
    ["officer@broker.example", "compliance"],
  ] as const) {
    test(`a ${role} sees partners and pairs without forms, and the API refuses the change it sends anyway`, async () => {
      const partnerId = ctx.partner.id;
      const before = (await ctx.adminRequest("GET", `/admin/partners/${partnerId}`)).json().result;
      const partnersBefore = (await ctx.adminRequest("GET", "/admin/partners")).json().items.length;
      const pairBefore = await ctx.services.tradingAdmin.showPair("BTC-AED");
      const trailBefore = (await ctx.adminRequest("GET", "/admin/audit")).json().total;
      const page = await signedIn(email);
      await page.goto(`${base}/console/partners`);
      await page.getByText("Your role may read partners but not change it.").waitFor();
      assert.equal(await page.getByRole("button", { name: "Create partner" }).count(), 0);
      await page.goto(`${base}/console/partners/${partnerId}`);
      await page.getByText("Your role may read this partner but not change it.").waitFor();
      assert.equal(await page.locator("form[data-api^='/admin/partners']").count(), 0);
      await page.goto(`${base}/console/pairs/BTC-AED`);
      await page.getByText("Your role may read this pair but not change it.").waitFor();
      assert.equal(await page.getByRole("button", { name: "Pin price" }).count(), 0);

      // The page's own CSRF token and cookie, sent by the page's own script context.
      const send = (url: string, method: string, body: unknown) =>
        page.evaluate(`(async () => {
          const csrf = document.querySelector('meta[name="csrf-token"]').getAttribute("content");
          const res = await fetch(${JSON.stringify(url)}, {
            method: ${JSON.stringify(method)},
            headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
            body: JSON.stringify(${JSON.stringify(body)}),
          });
          return res.status;
        })()`);
      assert.equal(
        await send(`/admin/partners/${partnerId}/active`, "PUT", { active: false, reason: "not mine" }),
        403,
      );
      assert.equal(
        await send(`/admin/partners/${partnerId}/keys`, "POST", {
          label: "x",
          public_key_pem: publicKeyPem(),
        }),
        403,
      );
      assert.equal(
        await send("/admin/pairs/BTC-AED/price", "PUT", { buy: "1", sell: "1", reason: "not mine" }),
        403,
      );
      assert.equal(
        await send("/admin/partners", "POST", { name: "x", public_key_pem: null, allowed_ips: [] }),
        403,
      );
      assert.deepEqual((await ctx.adminRequest("GET", `/admin/partners/${partnerId}`)).json().result, before);
      assert.equal((await ctx.adminRequest("GET", "/admin/partners")).json().items.length, partnersBefore);
      assert.deepEqual(await ctx.services.tradingAdmin.showPair("BTC-AED"), pairBefore);
      assert.equal((await ctx.adminRequest("GET", "/admin/audit")).json().total, trailBefore);
      await page.context().close();
    });
  }
});
