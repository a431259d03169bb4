// `counterpart webhook list | disable | enable` against a running sandbox: the demo partner's
// endpoint (registered through the signed API with `counterpart call`) listed, disabled with a
// reason that lands on the audit trail, enabled again; bad input refused with exit 2 and one line
// on stderr, changing nothing.

import assert from "node:assert/strict";
import { test } from "node:test";
import { assertFails, assertOk, json, runCli, startSandbox } from "../testing.ts";

test("counterpart webhook list, disable --reason, enable against a running sandbox", async (t) => {
  const { env, demo } = await startSandbox(t, "counterpart-webhooks-");
  const cli = (args: string[]) => runCli(args, env);

  const none = await cli(["webhook", "list"]);
  assertOk(none);
  assert.equal(none.stdout, "no webhook endpoints\n");

  // The sandbox allows loopback URLs; nothing needs to listen there for this test.
  const registered = await cli([
    "call",
    "POST",
    "/v1/partner/webhook-endpoints",
    "--data",
    JSON.stringify({ url: "http://127.0.0.1:9/hooks", event_types: ["order.completed"] }),
    "--json",
  ]);
  assertOk(registered);
  const id = (json(registered).body as { result: { id: string } }).result.id;

  const listed = await cli(["webhook", "list"]);
  assertOk(listed);
  assert.match(
    listed.stdout,
    new RegExp(
      `^${id}\\s+${demo.partner_id}\\s+enabled\\s+order\\.completed\\s+http://127\\.0\\.0\\.1:9/hooks$`,
      "m",
    ),
  );
  const mine = json(await cli(["webhook", "list", "--partner", demo.partner_id, "--json"]));
  assert.deepEqual(
    (mine.items as { id: string; status: string }[]).map((e) => [e.id, e.status]),
    [[id, "enabled"]],
  );
  const others = json(
    await cli(["webhook", "list", "--partner", "00000000-0000-4000-8000-000000000000", "--json"]),
  );
  assert.deepEqual(others.items, []);

  // Refused, and nothing changes: no reason, a blank one, an unknown endpoint.
  assertFails(await cli(["webhook", "disable", id]), 2, /--reason/);
  assertFails(await cli(["webhook", "disable", id, "--reason", "  "]), 2, /--reason: give the reason/);
  assertFails(
    await cli(["webhook", "disable", "00000000-0000-4000-8000-000000000000", "--reason", "x"]),
    2,
    /unknown webhook endpoint 00000000-0000-4000-8000-000000000000/,
  );
  assertFails(await cli(["webhook", "enable", "not-an-id"]), 2, /unknown webhook endpoint not-an-id/);
  const unchanged = json(await cli(["webhook", "list", "--json"]));
  assert.equal((unchanged.items as { status: string }[])[0]?.status, "enabled");
  const emptyTrail = json(await cli(["audit", "list", "--target-type", "webhook_endpoint", "--json"]));
  assert.deepEqual(emptyTrail.items, []);

  const off = await cli(["webhook", "disable", id, "--reason", "answers 500 to everything"]);
  assertOk(off);
  assert.match(off.stdout, new RegExp(`^webhook endpoint ${id} is now disabled\\t`));
  const seen = await cli(["call", "GET", `/v1/partner/webhook-endpoints/${id}`, "--json"]);
  assert.equal((json(seen).body as { result: { status: string } }).result.status, "disabled");

  const on = await cli(["webhook", "enable", id, "--json"]);
  assertOk(on);
  assert.equal(json(on).status, "enabled");

  const trail = json(await cli(["audit", "list", "--target-type", "webhook_endpoint", "--json"]));
  assert.deepEqual(
    (trail.items as { action: string; target_id: string; reason: string | null; after: unknown }[]).map(
      (e) => [e.action, e.target_id, e.reason, e.after],
    ),
    [
      ["webhook_endpoint.enabled", id, null, { status: "enabled" }],
      ["webhook_endpoint.enabled", id, "answers 500 to everything", { status: "disabled" }],
    ],
  );
});
