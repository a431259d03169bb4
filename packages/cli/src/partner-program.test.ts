// The published partner CLI's program: the partner's commands only, and the version of its
// package. (That it never loads the server is enforced by `npm run build`, which refuses a
// partner build importing a package the published manifest does not declare.)

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { buildProgram } from "./operator/cli.ts";
import { callExitCode } from "./partner/call-command.ts";
import { buildPartnerProgram } from "./partner/cli.ts";
import { assertFails, assertOk, runPartnerCli } from "./testing.ts";

const names = (program: { commands: readonly { name(): string }[] }) =>
  program.commands.map((c) => c.name()).sort();

test("the partner program has the partner commands and none of the operator's", () => {
  const partner = buildPartnerProgram({}, () => {});
  assert.deepEqual(names(partner), [
    "balance",
    "call",
    "client",
    "deposit",
    "document",
    "events",
    "execute",
    "keygen",
    "order",
    "quote",
    "withdraw",
  ]);
  const client = partner.commands.find((c) => c.name() === "client")!;
  assert.deepEqual(names(client), ["activate", "create", "deactivate", "get", "list", "update"]);
  // Every partner command of the operator's program is there, with the same subcommands.
  const operator = buildProgram({}, () => {});
  for (const command of partner.commands) {
    const same = operator.commands.find((c) => c.name() === command.name());
    assert.ok(same, `${command.name()} is a command of the repository's CLI too`);
    for (const sub of command.commands) {
      assert.ok(
        same.commands.some((c) => c.name() === sub.name()),
        `${command.name()} ${sub.name()}`,
      );
    }
  }
});

test("--version is the package's version", () => {
  const manifest = JSON.parse(
    fs.readFileSync(path.join(import.meta.dirname, "..", "package.json"), "utf8"),
  ) as {
    version: string;
  };
  assert.equal(buildPartnerProgram({}, () => {}).version(), manifest.version);
});

test("a command the partner CLI does not have is exit 2 with one line, --help or not", async () => {
  const env = { PATH: process.env.PATH };
  const [asked, plain, nested, help, commandHelp] = await Promise.all([
    runPartnerCli(["partner", "create", "--help"], env),
    runPartnerCli(["partner", "create"], env),
    runPartnerCli(["client", "frobnicate", "--help"], env),
    runPartnerCli(["--help"], env),
    runPartnerCli(["client", "create", "--help"], env),
  ]);
  for (const r of [asked, plain]) {
    assertFails(r, 2, /^counterpart: unknown command 'partner'$/);
    assert.equal(r.stdout, "");
  }
  assertFails(nested, 2, /^counterpart: unknown command 'frobnicate'$/);
  assertOk(help);
  assert.match(help.stdout, /^Usage: counterpart/);
  assertOk(commandHelp);
  assert.match(commandHelp.stdout, /^Usage: counterpart client create/);
});

test("keygen says to send the public key to the operator, who registers it", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "counterpart-keygen-"));
  try {
    const r = await runPartnerCli(["keygen", "--out", path.join(dir, "keys")], { PATH: process.env.PATH });
    assertOk(r);
    assert.match(
      r.stdout,
      /public key: .*public-key\.pem \(send this file to the operator, who registers it\)/,
    );
    assert.doesNotMatch(r.stdout, /partner create/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("call exits as the partner commands do: 2 for a 4xx the caller fixes, 1 for the rest", () => {
  const codes = Object.fromEntries(
    [200, 201, 204, 302, 400, 401, 404, 405, 408, 409, 413, 422, 429, 500, 503].map((s) => [
      s,
      callExitCode(s),
    ]),
  );
  assert.deepEqual(codes, {
    200: 0,
    201: 0,
    204: 0,
    302: 1,
    400: 2,
    401: 1,
    404: 2,
    405: 1,
    408: 1,
    409: 2,
    413: 2,
    422: 2,
    429: 1,
    500: 1,
    503: 1,
  });
});
