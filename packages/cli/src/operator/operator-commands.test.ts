// `counterpart operator ...` against a running sandbox: accounts created with a password from
// stdin or none (sign-in by one-time link), their role changed, disabled; every effect checked by
// signing in through the admin API; bad input refused with exit 2 and one line on stderr.

import assert from "node:assert/strict";
import { test } from "node:test";
import { assertFails, assertOk, json, runCli, startSandbox } from "../testing.ts";

test("counterpart operator create, list, set-role, disable, link against a running sandbox", async (t) => {
  const { env, endpoints } = await startSandbox(t, "counterpart-operators-");
  const cli = (args: string[], input?: string) => runCli(args, env, input);
  const password = "a long enough password";
  const signIn = (email: string, pw: string) =>
    fetch(`${endpoints.admin_url}/admin/session`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ email, password: pw }),
    });

  const created = await cli(
    [
      "operator",
      "create",
      "--email",
      "Ana@Broker.example",
      "--role",
      "compliance",
      "--password-stdin",
      "--json",
    ],
    `${password}\n`,
  );
  assertOk(created);
  const ana = json(created);
  assert.equal(ana.email, "ana@broker.example");
  assert.equal(ana.role, "compliance");
  assert.equal(ana.has_password, true);
  const signedIn = await signIn("ana@broker.example", password);
  assert.equal(signedIn.status, 200);
  assert.equal(
    ((await signedIn.json()) as { result: { operator: { role: string } } }).result.operator.role,
    "compliance",
  );

  const listed = await cli(["operator", "list"]);
  assertOk(listed);
  assert.match(listed.stdout, /^ana@broker\.example\tcompliance\tactive\t[0-9a-f-]{36}$/m);

  const demoted = await cli([
    "operator",
    "set-role",
    "--email",
    "ana@broker.example",
    "--role",
    "viewer",
    "--json",
  ]);
  assertOk(demoted);
  assert.equal(json(demoted).role, "viewer");

  assertOk(await cli(["operator", "disable", "--email", "ana@broker.example", "--reason", "on leave"]));
  assert.equal((await signIn("ana@broker.example", password)).status, 401);
  assertOk(await cli(["operator", "enable", "--email", "ana@broker.example"]));
  assert.equal((await signIn("ana@broker.example", password)).status, 200);

  assertOk(await cli(["operator", "create", "--email", "bo@broker.example", "--role", "admin"]));
  const link = await cli(["operator", "link", "--email", "bo@broker.example"]);
  assertOk(link);
  const url = link.stdout.split("\n")[0]!;
  assert.ok(url.startsWith(`${endpoints.admin_url}/admin/session/link?token=`), link.stdout);
  // The link signs in and lands on the console (303), its session in the cookie.
  const followed = await fetch(url, { redirect: "manual" });
  assert.equal(followed.status, 303);
  assert.equal(followed.headers.get("location"), "/console");
  assert.match(
    followed.headers.get("set-cookie") ?? "",
    /^counterpart_session=.+; HttpOnly; SameSite=Strict$/,
  );
  assert.equal((await fetch(url, { redirect: "manual" })).status, 401);

  assertFails(
    await cli(["operator", "create", "--email", "ana@broker.example", "--role", "viewer"]),
    2,
    /--email: An operator with this e-mail already exists/,
  );
  assertFails(
    await cli(
      ["operator", "create", "--email", "cy@broker.example", "--role", "viewer", "--password-stdin"],
      "short\n",
    ),
    2,
    /the password: Password should have 12 to 256 characters/,
  );
  assertFails(await cli(["operator", "create", "--email", "cy@broker.example", "--role", "root"]), 2, /root/);
  assertFails(
    await cli(["operator", "disable", "--email", "nobody@broker.example"]),
    2,
    /no operator has the e-mail address nobody@broker\.example/,
  );
  // Each change is on the audit trail, as the bearer token (the CLI) with the reason given.
  const trail = json(await cli(["audit", "list", "--target-type", "operator", "--json"]));
  const actions = (trail.items as { action: string; reason: string | null; actor: { kind: string } }[]).map(
    (e) => [e.action, e.reason, e.actor.kind],
  );
  assert.deepEqual(actions, [
    ["operator.sign_in_link", null, "token"],
    ["operator.create", null, "token"],
    ["operator.active", null, "token"],
    ["operator.active", "on leave", "token"],
    ["operator.role", null, "token"],
    ["operator.create", null, "token"],
  ]);
  const text = await cli(["audit", "list", "--action", "operator.active", "--page-size", "1"]);
  assertOk(text);
  assert.match(
    text.stdout,
    /^\S+\ttoken\toperator\.active\toperator:[0-9a-f-]{36}\n\(page 1, 2 entries in all\)\n$/,
  );
  assertFails(
    await cli(["audit", "list", "--actor", "someone"]),
    2,
    /--actor: Input should be an operator id, token or system/,
  );
  const after = json(await cli(["operator", "list", "--json"]));
  assert.deepEqual(
    (after.items as { email: string }[]).map((o) => o.email),
    ["ana@broker.example", "bo@broker.example"],
  );
});
