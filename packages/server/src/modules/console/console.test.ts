// The back office console in headless Chromium (Debian's chromium driven by playwright-core): a
// compliance officer signs in, looks a client up, changes its status with a reason and sees the
// audit entry on the client's page; a viewer sees the page without the forms and is refused (403)
// at the API when it sends the change anyway. Pages without a session go to the sign-in page.
// With CONSOLE_SCREENSHOTS=DIR the sign-in page is saved there as PNG (docs/console/; the other
// pages' pictures come from console-records-browser.test.ts).

import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { type ConsoleBrowser, openConsoleBrowser } from "../../testing/console-browser.ts";
import { clientPayload } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";

const screenshots = process.env.CONSOLE_SCREENSHOTS ?? null;

describe("the console in a browser", () => {
  let ctx: TestContext;
  let consoleBrowser: ConsoleBrowser;
  let base: string;

  before(async () => {
    ctx = await startTestContext();
    consoleBrowser = await openConsoleBrowser(ctx, [
      ["officer@broker.example", "compliance"],
      ["reader@broker.example", "viewer"],
    ]);
    base = consoleBrowser.base;
  });
  after(async () => {
    await consoleBrowser?.close();
    await ctx.close();
  });

  const signedIn = (email: string): Promise<Page> =>
    consoleBrowser.signIn(email, {
      onSignInPage: async (page) => {
        if (screenshots !== null) await page.screenshot({ path: path.join(screenshots, "sign-in.png") });
      },
    });

  test("a compliance officer looks a client up, changes its status with a reason, and sees it on the trail", async () => {
    const created = await ctx.signed({ method: "POST", url: "/v1/partner/clients", body: clientPayload(1) });
    assert.equal(created.statusCode, 201, created.body);
    const client = created.json().result;
    const page = await signedIn("officer@broker.example");

    await page.getByLabel("Client id, e-mail, phone or government id").fill(client.email);
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/console\/clients\?q=/);
    const link = page.getByRole("link", { name: client.partner_client_id });
    await link.click();
    await page.waitForURL(`${base}/console/clients/${ctx.partner.id}/${client.partner_client_id}`);

    // Without a reason the browser itself refuses to send the form (required field).
    await page.getByLabel("New status").selectOption("rejected");
    await page.getByRole("button", { name: "Change status" }).click();
    assert.equal(
      (
        await ctx.adminRequest("GET", `/admin/partners/${ctx.partner.id}/clients/${client.partner_client_id}`)
      ).json().result.status,
      client.status,
    );
    await page.getByLabel("Reason (on the audit trail)").fill("forged passport");
    await page.getByRole("button", { name: "Change status" }).click();
    await page.getByRole("cell", { name: "forged passport" }).waitFor();
    assert.equal(await page.getByRole("row", { name: /^Status rejected$/ }).count(), 1);
    const history = page.locator("table").last();
    assert.match(await history.innerText(), /officer@broker\.example\s+client\.status/);

    const stored = await ctx.adminRequest(
      "GET",
      `/admin/partners/${ctx.partner.id}/clients/${client.partner_client_id}`,
    );
    assert.equal(stored.json().result.status, "rejected");
    const trail = (await ctx.adminRequest("GET", "/admin/audit?action=client.status")).json();
    assert.equal(trail.total, 1);
    assert.deepEqual(
      [trail.items[0].actor.email, trail.items[0].reason],
      ["officer@broker.example", "forged passport"],
    );

    await page.getByRole("link", { name: "Audit trail" }).click();
    await page.waitForURL(`${base}/console/audit`);
    await page.getByRole("cell", { name: "forged passport" }).waitFor();

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${base}/console/sign-in`);
    await page.goto(`${base}/console/audit`);
    assert.equal(new URL(page.url()).pathname, "/console/sign-in");
    await page.context().close();
  });

  test("a viewer sees a client without the forms, and the API refuses the change it sends anyway", async () => {
    const created = await ctx.signed({ method: "POST", url: "/v1/partner/clients", body: clientPayload(2) });
    assert.equal(created.statusCode, 201, created.body);
    const pcid = created.json().result.partner_client_id;
    const page = await signedIn("reader@broker.example");
    await page.goto(`${base}/console/clients/${ctx.partner.id}/${pcid}`);
    await page.getByText("Your role may read this client but not change it.").waitFor();
    assert.equal(await page.getByRole("button", { name: "Change status" }).count(), 0);
    // The page's own CSRF token and cookie, sent by the page's own script context.
    const url = `/admin/partners/${ctx.partner.id}/clients/${pcid}/status`;
    const status = await page.evaluate(`(async () => {
      const csrf = document.querySelector('meta[name="csrf-token"]').getAttribute("content");
      const res = await fetch(${JSON.stringify(url)}, {
        method: "PUT",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify({ status: "rejected", reason: "not mine to decide" }),
      });
      return res.status;
    })()`);
    assert.equal(status, 403);
    assert.equal(
      (await ctx.adminRequest("GET", `/admin/partners/${ctx.partner.id}/clients/${pcid}`)).json().result
        .status,
      created.json().result.status,
    );
    await page.context().close();
  });
});
