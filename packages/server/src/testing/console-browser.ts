// The console's browser tests' common ground: the admin listener of a test context on a loopback
// port, Debian's chromium driven by playwright-core, operators with a password, and a page signed
// in as one of them.

import assert from "node:assert/strict";
import { type Browser, chromium, type Page } from "playwright-core";
import type { TestContext } from "./harness.ts";

export const operatorPassword = "correct horse battery staple";
/** Bounds every wait of the browser: generous, since the machine running the tests may be loaded. */
export const browserWaitMs = 60_000;

export type OperatorRole = "admin" | "compliance" | "viewer";

export interface ConsoleBrowser {
  readonly browser: Browser;
  /** The admin listener's origin, e.g. http://127.0.0.1:41234. */
  readonly base: string;
  /**
   * A new browser context signed in as `email`, on the clients page. It first asks for the
   * clients page without a session and checks that it is sent to the sign-in page;
   * `onSignInPage` runs there (a screenshot).
   */
  signIn(
    email: string,
    options?: { width?: number; onSignInPage?: (page: Page) => Promise<void> },
  ): Promise<Page>;
  close(): Promise<void>;
}

/** Creates the operators, opens the admin listener and launches the browser. */
export async function openConsoleBrowser(
  ctx: TestContext,
  operators: readonly (readonly [email: string, role: OperatorRole])[],
): Promise<ConsoleBrowser> {
  for (const [email, role] of operators) {
    const res = await ctx.adminRequest("POST", "/admin/operators", {
      email,
      role,
      password: operatorPassword,
    });
    assert.equal(res.statusCode, 201, res.body);
  }
  await ctx.admin.listen({ port: 0, host: "127.0.0.1" });
  const address = ctx.admin.server.address();
  assert.ok(address !== null && typeof address === "object");
  const base = `http://127.0.0.1:${address.port}`;
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    timeout: browserWaitMs,
  });
  return {
    browser,
    base,
    async signIn(email, options = {}) {
      const context = await browser.newContext({ viewport: { width: options.width ?? 1366, height: 900 } });
      context.setDefaultTimeout(browserWaitMs);
      const page = await context.newPage();
      await page.goto(`${base}/console/clients`);
      assert.equal(new URL(page.url()).pathname, "/console/sign-in", "no session: the sign-in page");
      await options.onSignInPage?.(page);
      await page.getByLabel("E-mail address").fill(email);
      await page.getByLabel("Password").fill(operatorPassword);
      await page.keyboard.press("Enter");
      await page.waitForURL(`${base}/console/clients`);
      return page;
    },
    close: () => browser.close(),
  };
}
