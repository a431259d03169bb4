// docs/decisions.md "Operator accounts": operator accounts and roles, console sessions (cookie,
// CSRF, idle timeout, sign-out), throttled sign-in, one-time links, and the role of every admin
// route, walked exhaustively.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import { after, before, describe, test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { buildAdminApp } from "../../app.ts";
import { limits } from "../../config/limits.ts";
import type { OperatorRole } from "../../db/schema.ts";
import { isoFromMs } from "../../db/time.ts";
import { adminRouteRoles, publicAdminRoutes } from "../../http/admin-access.ts";
import { startTestContext, type TestContext, testNote } from "../../testing/harness.ts";
import { roleAllows } from "./operator-views.ts";
import { OperatorsService } from "./operators-service.ts";

const password = "correct horse battery staple";

interface Session {
  cookie: string;
  csrf: string;
  setCookie: string;
}

describe("operator accounts, sessions and roles", () => {
  let ctx: TestContext;
  let seq = 0;

  before(async () => {
    ctx = await startTestContext();
  });
  after(async () => {
    await ctx.close();
  });

  async function createOperator(role: OperatorRole, pw: string | null = password) {
    seq++;
    const email = `op${seq}@broker.example`;
    const res = await ctx.adminRequest("POST", "/admin/operators", { email, role, password: pw });
    assert.equal(res.statusCode, 201, res.body);
    return { id: res.json().result.id as string, email };
  }

  async function signIn(email: string, pw = password, remoteAddress = "127.0.0.1") {
    return ctx.admin.inject({
      method: "POST",
      url: "/admin/session",
      payload: { email, password: pw },
      remoteAddress,
    });
  }

  function sessionOf(res: LightMyRequestResponse): Session {
    assert.equal(res.statusCode, 200, res.body);
    const setCookie = String(res.headers["set-cookie"]);
    const cookie = setCookie.split(";")[0]!;
    return { cookie, csrf: res.json().result.csrf_token, setCookie };
  }

  async function session(role: OperatorRole): Promise<Session> {
    const { email } = await createOperator(role);
    return sessionOf(await signIn(email));
  }

  function as(
    s: Session,
    method: "GET" | "POST" | "PUT" | "DELETE",
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) {
    return ctx.admin.inject({
      method,
      url,
      headers: { cookie: s.cookie, "x-csrf-token": s.csrf, ...headers },
      ...(body === undefined ? {} : { payload: body as object }),
    });
  }

  /** Everything an operator can change, as one text: equal before and after means nothing changed. */
  async function snapshot(): Promise<string> {
    const db = ctx.services.database.db;
    const tables = [
      await db.selectFrom("partners").selectAll().orderBy("id").execute(),
      await db.selectFrom("partner_keys").selectAll().orderBy("id").execute(),
      await db.selectFrom("clients").selectAll().orderBy("id").execute(),
      await db.selectFrom("assets").selectAll().orderBy("id").execute(),
      await db.selectFrom("asset_pairs").selectAll().orderBy("id").execute(),
      await db.selectFrom("partner_pairs").selectAll().orderBy("partner_id").orderBy("pair_id").execute(),
      await db.selectFrom("operators").selectAll().orderBy("id").execute(),
      await db.selectFrom("operator_sign_in_links").select("token_sha256").orderBy("token_sha256").execute(),
    ];
    return JSON.stringify(tables);
  }

  test("an account's password is stored as a scrypt hash, never as given; bad input is a 422", async () => {
    const { id, email } = await createOperator("viewer");
    const row = await ctx.services.database.db
      .selectFrom("operators")
      .selectAll()
      .where("id", "=", id)
      .executeTakeFirstOrThrow();
    assert.match(row.password_hash ?? "", /^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    assert.ok(!(row.password_hash ?? "").includes(password));
    const before = await snapshot();
    for (const [body, field] of [
      [{ email, role: "viewer", password }, "email"],
      [{ email: email.toUpperCase(), role: "viewer", password }, "email"],
      [{ email: "not-an-address", role: "viewer", password }, "email"],
      [{ email: "new@broker.example", role: "viewer", password: "short" }, "password"],
      [{ email: "new@broker.example", role: "root", password }, "role"],
    ] as const) {
      const res = await ctx.adminRequest("POST", "/admin/operators", body);
      assert.equal(res.statusCode, 422, res.body);
      assert.deepEqual(res.json().msg_detail[0].loc, ["body", field]);
    }
    assert.equal(await snapshot(), before);
  });

  test("sign-in sets an HttpOnly, SameSite=Strict cookie (not Secure on loopback) and no-store", async () => {
    const { email } = await createOperator("viewer");
    const res = await signIn(email);
    const s = sessionOf(res);
    assert.match(s.setCookie, /^counterpart_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict$/);
    assert.equal(res.headers["cache-control"], "no-store");
    assert.equal(res.json().result.operator.email, email);
    assert.equal(res.json().result.operator.role, "viewer");
    assert.equal(res.json().result.idle_timeout_s, limits.operatorSessionIdleMs / 1000);
    assert.equal((await as(s, "GET", "/admin/partners")).statusCode, 200);
    const me = await as(s, "GET", "/admin/session");
    assert.equal(me.json().result.csrf_token, s.csrf);
    // Only the token's digest is stored.
    const token = s.cookie.split("=")[1]!;
    const stored = await ctx.services.database.db
      .selectFrom("operator_sessions")
      .select("token_sha256")
      .execute();
    assert.ok(!stored.some((r) => r.token_sha256 === token));
    assert.ok(stored.some((r) => r.token_sha256 === crypto.createHash("sha256").update(token).digest("hex")));
  });

  test("the cookie is Secure when the admin listener is not on a loopback address", async () => {
    const exposed = buildAdminApp(
      { ...ctx.services, config: { ...ctx.services.config, host: "0.0.0.0" } },
      {
        logger: false,
        adminToken: ctx.adminToken,
        metricsText: async () => ({ contentType: "text/plain", body: "" }),
      },
    );
    try {
      const { email } = await createOperator("viewer");
      const res = await exposed.inject({
        method: "POST",
        url: "/admin/session",
        payload: { email, password },
      });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers["set-cookie"]), /; HttpOnly; SameSite=Strict; Secure$/);
    } finally {
      await exposed.close();
    }
  });

  test("a wrong password, an unknown address and a disabled account are one 401; nothing is signed in", async () => {
    const { id, email } = await createOperator("admin");
    const disabled = await ctx.adminRequest("PUT", `/admin/operators/${id}/active`, {
      active: false,
      reason: "left the company",
    });
    assert.equal(disabled.statusCode, 200);
    const { email: other } = await createOperator("admin");
    for (const res of [
      await signIn(other, "wrong password, long enough", "10.0.0.1"),
      await signIn("nobody@broker.example", password, "10.0.0.1"),
      await signIn(email, password, "10.0.0.1"),
    ]) {
      assert.equal(res.statusCode, 401);
      assert.deepEqual(res.json(), { code: 401, msg: "Unauthorized", msg_detail: null });
      assert.equal(res.headers["set-cookie"], undefined);
    }
  });

  test("state-changing requests of a session need its CSRF token and the listener's own origin", async () => {
    const s = await session("admin");
    const { id: target } = await createOperator("viewer");
    const url = `/admin/operators/${target}/role`;
    const before = await snapshot();
    const refused = [
      await ctx.admin.inject({
        method: "PUT",
        url,
        headers: { cookie: s.cookie },
        payload: { role: "admin" },
      }),
      await as(s, "PUT", url, { role: "admin" }, { "x-csrf-token": "wrong" }),
      await as(s, "PUT", url, { role: "admin" }, { "x-csrf-token": `${s.csrf}x` }),
      await as(s, "PUT", url, { role: "admin" }, { origin: "https://evil.example" }),
      await as(s, "PUT", url, { role: "admin" }, { referer: "https://evil.example/page" }),
      // An empty Origin is no Origin: the Referer is checked instead.
      await as(s, "PUT", url, { role: "admin" }, { origin: "", referer: "https://evil.example/page" }),
      await as(s, "PUT", url, { role: "admin" }, { origin: "null" }),
    ];
    for (const res of refused) {
      assert.equal(res.statusCode, 403, res.body);
      assert.deepEqual(res.json(), { code: 403, msg: "Forbidden", msg_detail: null });
    }
    assert.equal(await snapshot(), before);
    const ok = await as(s, "PUT", url, { role: "compliance" }, { origin: "http://localhost:80" });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json().result.role, "compliance");
  });

  test("a session ends after the idle timeout, and after its lifetime however busy", async () => {
    const s = await session("viewer");
    ctx.clock.advance(limits.operatorSessionIdleMs - 1_000);
    assert.equal((await as(s, "GET", "/admin/partners")).statusCode, 200);
    ctx.clock.advance(limits.operatorSessionIdleMs - 1_000);
    assert.equal(
      (await as(s, "GET", "/admin/partners")).statusCode,
      200,
      "a request moves the idle timeout on",
    );
    ctx.clock.advance(limits.operatorSessionIdleMs);
    const res = await as(s, "GET", "/admin/partners");
    assert.equal(res.statusCode, 401);
    // Ended for good: going back in time does not bring it back.
    ctx.clock.advance(-limits.operatorSessionIdleMs);
    assert.equal((await as(s, "GET", "/admin/partners")).statusCode, 401);

    const busy = await session("viewer");
    const steps = Math.ceil(limits.operatorSessionLifetimeMs / (limits.operatorSessionIdleMs / 2));
    let last = 0;
    for (let i = 0; i < steps; i++) {
      ctx.clock.advance(limits.operatorSessionIdleMs / 2);
      last = (await as(busy, "GET", "/admin/session")).statusCode;
      if (last === 401) break;
    }
    assert.equal(last, 401);
  });

  test("housekeeping deletes ended sessions, expired links and old refused sign-ins, and nothing live", async () => {
    const db = ctx.services.database.db;
    const idle = await createOperator("viewer");
    const idleSession = sessionOf(await signIn(idle.email));
    const linked = await createOperator("viewer", null);
    const oldLink = await ctx.adminRequest("POST", `/admin/operators/${linked.id}/sign-in-link`);
    assert.equal(oldLink.statusCode, 201, oldLink.body);
    const guessed = await createOperator("viewer");
    assert.equal((await signIn(guessed.email, "not the password at all")).statusCode, 401);
    const failuresOf = async (email: string) =>
      (
        await db
          .selectFrom("operator_sign_in_failures")
          .select("key")
          .where("key", "=", `email:${email}`)
          .execute()
      ).length;
    assert.equal(await failuresOf(guessed.email), 1);

    // Past the idle timeout (and so past a link's life and the throttle's window).
    ctx.clock.advance(limits.operatorSessionIdleMs + 1_000);
    const live = await createOperator("viewer");
    const liveSession = sessionOf(await signIn(live.email));
    const newLink = (await ctx.adminRequest("POST", `/admin/operators/${linked.id}/sign-in-link`)).json()
      .result.token;
    // A session kept busy, but started longer ago than a session may last.
    const old = await createOperator("viewer");
    const oldSession = sessionOf(await signIn(old.email));
    await db
      .updateTable("operator_sessions")
      .set({ created_at: isoFromMs(ctx.clock.nowMs() - limits.operatorSessionLifetimeMs - 1_000) })
      .where("operator_id", "=", old.id)
      .execute();

    const sessionsOf = async (operatorId: string) =>
      (
        await db
          .selectFrom("operator_sessions")
          .select("token_sha256")
          .where("operator_id", "=", operatorId)
          .execute()
      ).length;
    const linksOf = async (operatorId: string) =>
      (
        await db
          .selectFrom("operator_sign_in_links")
          .select("token_sha256")
          .where("operator_id", "=", operatorId)
          .execute()
      ).length;
    assert.equal(await sessionsOf(idle.id), 1);
    assert.equal(await sessionsOf(old.id), 1);
    assert.equal(await linksOf(linked.id), 2);

    const purged = await ctx.services.operators.purgeEnded();
    assert.ok(purged.sessions >= 2 && purged.links >= 1 && purged.failures >= 1, JSON.stringify(purged));
    assert.equal(await sessionsOf(idle.id), 0, "the idle session is gone");
    assert.equal(await sessionsOf(old.id), 0, "the session past its lifetime is gone");
    assert.equal(await linksOf(linked.id), 1, "the expired link is gone, the new one kept");
    assert.equal(await failuresOf(guessed.email), 0, "refused sign-ins past the window are gone");

    // What is live still opens: the fresh session, the new link; the ended ones still do not.
    assert.equal(await sessionsOf(live.id), 1);
    assert.equal((await as(liveSession, "GET", "/admin/session")).statusCode, 200);
    assert.equal((await as(idleSession, "GET", "/admin/session")).statusCode, 401);
    assert.equal((await as(oldSession, "GET", "/admin/session")).statusCode, 401);
    const viaLink = await ctx.admin.inject({ method: "GET", url: `/admin/session/link?token=${newLink}` });
    assert.equal(viaLink.statusCode, 303, viaLink.body);
  });

  test("sign-out ends the session on the server and clears the cookie", async () => {
    const s = await session("viewer");
    const out = await as(s, "DELETE", "/admin/session");
    assert.equal(out.statusCode, 204);
    assert.match(
      String(out.headers["set-cookie"]),
      /^counterpart_session=; Path=\/; HttpOnly; SameSite=Strict; Max-Age=0$/,
    );
    assert.equal((await as(s, "GET", "/admin/partners")).statusCode, 401);
  });

  test("disabling an operator or changing its role or password ends its sessions", async () => {
    for (const [suffix, body] of [
      ["active", { active: false, reason: "on leave" }],
      ["role", { role: "admin" }],
      ["password", { password: "another long password" }],
    ] as const) {
      const { id, email } = await createOperator("viewer");
      const s = sessionOf(await signIn(email));
      assert.equal((await as(s, "GET", "/admin/partners")).statusCode, 200);
      const res = await ctx.adminRequest("PUT", `/admin/operators/${id}/${suffix}`, body);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal((await as(s, "GET", "/admin/partners")).statusCode, 401, suffix);
    }
  });

  test("password guessing is throttled per address, even for the right password, until the window passes", async () => {
    const { email } = await createOperator("viewer");
    for (let i = 0; i < limits.operatorSignInFailuresPerEmailMax; i++) {
      assert.equal((await signIn(email, `wrong guess number ${i}`, "10.1.0.1")).statusCode, 401);
    }
    for (const ip of ["10.1.0.1", "10.1.0.2"]) {
      const res = await signIn(email, password, ip);
      assert.equal(res.statusCode, 429);
      assert.deepEqual(res.json(), { code: 429, msg: "Too Many Requests", msg_detail: null });
      assert.equal(res.headers["retry-after"], String(limits.operatorSignInWindowMs / 1000));
      assert.equal(res.headers["set-cookie"], undefined);
    }
    ctx.clock.advance(limits.operatorSignInWindowMs);
    sessionOf(await signIn(email, password, "10.1.0.1"));
  });

  test("password guessing is throttled per IP address across e-mail addresses", async () => {
    const { email } = await createOperator("viewer");
    const ip = "10.2.0.1";
    for (let i = 0; i < limits.operatorSignInFailuresPerIpMax; i++) {
      assert.equal((await signIn(`guess${i}@broker.example`, password, ip)).statusCode, 401);
    }
    assert.equal((await signIn(email, password, ip)).statusCode, 429);
    sessionOf(await signIn(email, password, "10.2.0.2"));
    ctx.clock.advance(limits.operatorSignInWindowMs);
  });

  test("a one-time sign-in link signs in once, before it expires", async () => {
    const { id } = await createOperator("compliance", null);
    const issued = await ctx.adminRequest("POST", `/admin/operators/${id}/sign-in-link`);
    assert.equal(issued.statusCode, 201, issued.body);
    const { url, token } = issued.json().result;
    assert.match(url, /^http:\/\/localhost(:80)?\/admin\/session\/link\?token=[A-Za-z0-9_-]{43}$/);
    const path = `/admin/session/link?token=${token}`;
    // Followed in a browser, the link sets the session's cookie and lands on the console.
    const first = await ctx.admin.inject({ method: "GET", url: path });
    assert.equal(first.statusCode, 303, first.body);
    assert.equal(first.headers.location, "/console");
    assert.equal(first.headers["cache-control"], "no-store");
    const cookie = String(first.headers["set-cookie"]).split(";")[0]!;
    assert.match(cookie, /^counterpart_session=[A-Za-z0-9_-]+$/);
    const landing = await ctx.admin.inject({ method: "GET", url: "/console", headers: { cookie } });
    assert.equal(landing.statusCode, 303);
    assert.equal(landing.headers.location, "/console/clients");
    const clients = await ctx.admin.inject({ method: "GET", url: "/console/clients", headers: { cookie } });
    assert.equal(clients.statusCode, 200);
    assert.match(String(clients.headers["content-type"]), /^text\/html/);
    const shown = await ctx.admin.inject({ method: "GET", url: "/admin/session", headers: { cookie } });
    assert.equal(shown.statusCode, 200, shown.body);
    assert.equal(shown.json().result.operator.role, "compliance");
    const s = { cookie, csrf: shown.json().result.csrf_token as string, setCookie: "" };
    assert.equal((await as(s, "GET", "/admin/partners")).statusCode, 200);
    const again = await ctx.admin.inject({ method: "GET", url: path });
    assert.equal(again.statusCode, 401);
    assert.deepEqual(again.json(), { code: 401, msg: "Unauthorized", msg_detail: null });
    assert.equal(again.headers["set-cookie"], undefined);

    const late = (await ctx.adminRequest("POST", `/admin/operators/${id}/sign-in-link`)).json().result.token;
    ctx.clock.advance(limits.operatorSignInLinkMs);
    assert.equal(
      (await ctx.admin.inject({ method: "GET", url: `/admin/session/link?token=${late}` })).statusCode,
      401,
    );
    // Without a password, the account cannot sign in by password.
    const { email } = await createOperator("viewer", null);
    assert.equal((await signIn(email, password)).statusCode, 401);
  });

  test("outside the sandbox no sign-in link is issued or honoured", async () => {
    const { id } = await createOperator("viewer", null);
    const { database, clock, random } = ctx.services;
    const production = new OperatorsService(database.db, clock, random, { signInLinks: false });
    assert.deepEqual(await production.issueSignInLink(id, testNote), {
      ok: false,
      error: "sign_in_links_off",
    });
    const issued = await ctx.services.operators.issueSignInLink(id, testNote);
    assert.ok(issued.ok);
    assert.deepEqual(await production.signInWithLink(issued.token), { ok: false, error: "bad_credentials" });
  });

  test("every admin route has a role, and each role is refused, with nothing changed, what it may not do", async () => {
    const keys = Object.keys(adminRouteRoles);
    for (const key of [...keys, ...publicAdminRoutes]) {
      const [method, url] = key.split(" ") as [string, string];
      assert.ok(ctx.admin.hasRoute({ method: method as "GET", url }), `${key} is a route of the admin app`);
    }
    const fill = (url: string) =>
      url
        .replace(":partner_id", ctx.partner.id)
        .replace(":partner_client_id", "no-such-client")
        .replace(":key_id", crypto.randomUUID())
        .replace(":operator_id", crypto.randomUUID())
        .replace(":pair_id", "ZZZ-YYY")
        .replace(":asset_id", "zz");
    const walked = keys.filter((k) => k !== "DELETE /admin/session");
    const sessions = {
      viewer: await session("viewer"),
      compliance: await session("compliance"),
      admin: await session("admin"),
    };
    const allowed: Record<OperatorRole, string[]> = { viewer: [], compliance: [], admin: [] };
    for (const role of ["viewer", "compliance", "admin"] as const) {
      const before = await snapshot();
      for (const key of walked) {
        const [method, url] = key.split(" ") as ["GET" | "POST" | "PUT" | "DELETE", string];
        const body = method === "GET" || method === "DELETE" ? undefined : {};
        const res = await as(sessions[role], method, fill(url), body);
        if (res.statusCode === 403) {
          assert.ok(!roleAllows(role, adminRouteRoles[key]!), `${role} may ${key}`);
          assert.deepEqual(res.json(), { code: 403, msg: "Forbidden", msg_detail: null });
        } else {
          assert.notEqual(res.statusCode, 401, `${role} ${key}: ${res.body}`);
          allowed[role].push(key);
        }
      }
      if (role !== "admin") assert.equal(await snapshot(), before, `${role} changed something`);
    }
    const reads = walked.filter((k) => k.startsWith("GET ") && k !== "GET /admin/operators");
    assert.deepEqual(allowed.viewer, reads);
    assert.deepEqual(
      allowed.compliance,
      [
        ...reads,
        "PUT /admin/partners/:partner_id/clients/:partner_client_id/status",
        "PUT /admin/partners/:partner_id/clients/:partner_client_id/active",
      ].sort((a, b) => walked.indexOf(a) - walked.indexOf(b)),
    );
    assert.deepEqual(allowed.admin, walked);
  });

  test("the bearer admin token acts as admin; a wrong one, or none, is a 401", async () => {
    const ok = await ctx.adminRequest("GET", "/admin/operators");
    assert.equal(ok.statusCode, 200);
    for (const authorization of ["Bearer wrong-token-0123456789", "Basic abc", ""]) {
      const res = await ctx.admin.inject({
        method: "GET",
        url: "/admin/operators",
        headers: { authorization },
      });
      assert.equal(res.statusCode, 401);
    }
    assert.equal((await ctx.admin.inject({ method: "GET", url: "/admin/operators" })).statusCode, 401);
    assert.equal((await ctx.admin.inject({ method: "GET", url: "/admin/nothing-here" })).statusCode, 401);
    assert.equal((await ctx.adminRequest("GET", "/admin/nothing-here")).statusCode, 404);
  });

  test("a known admin path asked with a method it does not serve is a 405 after authentication; nothing changes", async () => {
    const viewer = await session("viewer");
    const before = await snapshot();
    const wrong = [
      ["DELETE", "/admin/partners"],
      ["PATCH", "/admin/partners"],
      ["PUT", "/admin/partners"],
      ["POST", "/admin/audit"],
      ["DELETE", `/admin/partners/${ctx.partner.id}`],
      ["POST", "/console/orders"],
      ["OPTIONS", "/admin/operators"],
    ] as const;
    const methodNotAllowed = { code: 405, msg: "Method Not Allowed", msg_detail: null };
    for (const [method, url] of wrong) {
      const asToken = await ctx.adminRequest(method, url);
      assert.equal(asToken.statusCode, 405, `${method} ${url}: ${asToken.body}`);
      assert.deepEqual(asToken.json(), methodNotAllowed);
      // Any role learns it: the answer does nothing, so no role is needed for it.
      const asViewer = await ctx.admin.inject({
        method,
        url,
        headers: { cookie: viewer.cookie, "x-csrf-token": viewer.csrf },
      });
      assert.equal(asViewer.statusCode, 405, `${method} ${url} as a viewer: ${asViewer.body}`);
      assert.deepEqual(asViewer.json(), methodNotAllowed);
      // Without credentials it is the 401 of any path, known or not: nothing about the path leaks.
      const anonymous = await ctx.admin.inject({ method, url });
      assert.equal(anonymous.statusCode, 401, `${method} ${url} without credentials: ${anonymous.body}`);
      assert.deepEqual(anonymous.json(), { code: 401, msg: "Unauthorized", msg_detail: null });
    }
    // A session's state-changing request without its CSRF token is refused first, as everywhere.
    const noCsrf = await ctx.admin.inject({
      method: "POST",
      url: "/admin/audit",
      headers: { cookie: viewer.cookie },
    });
    assert.equal(noCsrf.statusCode, 403, noCsrf.body);
    // A public path (its GET answers anyone) is a 405 for anyone, as on the partner listener.
    for (const [method, url] of [
      ["POST", "/healthz"],
      ["DELETE", "/metrics"],
      ["POST", "/console/sign-in"],
      ["PUT", "/admin/session/link"],
    ] as const) {
      for (const res of [await ctx.admin.inject({ method, url }), await ctx.adminRequest(method, url)]) {
        assert.equal(res.statusCode, 405, `${method} ${url}: ${res.body}`);
        assert.deepEqual(res.json(), methodNotAllowed);
      }
    }
    // A path that does not exist is still a 404 signed in, 401 without credentials.
    assert.equal((await ctx.adminRequest("DELETE", "/admin/nothing-here")).statusCode, 404);
    assert.equal((await ctx.admin.inject({ method: "DELETE", url: "/admin/nothing-here" })).statusCode, 401);
    assert.equal(await snapshot(), before);
  });
});
