// `counterpart client set-status | set-active` against a live admin API (docs/decisions.md "Operator side"):
// output with and without --json, exit code 2 and one stderr line for bad input, 1 for a refused
// token. Run in child processes, as an operator would, until operator/cli.ts registers these commands.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { clientPayload } from "../../../server/src/testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../../server/src/testing/harness.ts";

describe("counterpart client", () => {
  let ctx: TestContext;
  let adminUrl: string;
  let dataDir: string;

  before(async () => {
    ctx = await startTestContext();
    await ctx.admin.listen({ port: 0, host: "127.0.0.1" });
    const address = ctx.admin.server.address();
    assert.ok(address !== null && typeof address === "object");
    adminUrl = `http://127.0.0.1:${address.port}`;
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cp-cli-clients-"));
    const res = await ctx.signed({ method: "POST", url: "/v1/partner/clients", body: clientPayload(1) });
    assert.equal(res.statusCode, 201, res.body);
  });
  after(async () => {
    await ctx.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /**
   * Runs one command line in a child process, the way operator/cli.ts runs commands (this file's commands
   * registered on a bare program): exit 2 for bad input, 1 for other failures, one stderr line.
   */
  function run(
    args: string[],
    token = ctx.adminToken,
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const script = `
      import { Command, CommanderError } from "commander";
      import { registerClientCommands } from ${JSON.stringify(path.join(import.meta.dirname, "client-admin-commands.ts"))};
      import { CliError } from ${JSON.stringify(path.join(import.meta.dirname, "../common/errors.ts"))};
      import { globalOptions } from ${JSON.stringify(path.join(import.meta.dirname, "../common/program.ts"))};
      const program = globalOptions(new Command("counterpart"));
      program.exitOverride();
      program.configureOutput({ writeErr: () => {}, outputError: () => {} });
      registerClientCommands(program, process.env);
      try {
        await program.parseAsync(process.argv.slice(1), { from: "user" });
      } catch (err) {
        process.stderr.write("counterpart: " + err.message + "\\n");
        process.exitCode = err instanceof CliError ? err.exitCode : err instanceof CommanderError ? 2 : 1;
      }`;
    const child = spawn(
      process.execPath,
      ["--input-type=module", "-e", script, ...args, "--admin-url", adminUrl, "--admin-token", token],
      {
        cwd: import.meta.dirname,
        env: { PATH: process.env.PATH ?? "", DATA_DIR: dataDir },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    return new Promise((resolve, reject) => {
      child.on("error", reject);
      child.on("close", (code) => resolve({ code, stdout, stderr }));
    });
  }

  const who = () => ["--partner", ctx.partner.id, "--client", "client-1"];

  test("set-status prints the client; --json prints one JSON object; the partner API shows it", async () => {
    const text = await run([
      "client",
      "set-status",
      ...who(),
      "--reason",
      "test set-up",
      "--status",
      "under_review",
    ]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^status:\s+under_review$/m);
    assert.match(text.stdout, /^verified_at:\s+\(none\)$/m);
    const json = await run([
      "client",
      "set-status",
      ...who(),
      "--reason",
      "test set-up",
      "--status",
      "verified",
      "--json",
    ]);
    assert.equal(json.code, 0, json.stderr);
    const printed = JSON.parse(json.stdout);
    assert.equal(printed.partner_client_id, "client-1");
    assert.equal(printed.status, "verified");
    assert.equal(typeof printed.verified_at, "string");
    const read = await ctx.signed({ method: "GET", url: "/v1/partner/clients/client-1/" });
    assert.equal(read.json().result.status, "verified");
  });

  test("set-active true|false", async () => {
    const off = await run([
      "client",
      "set-active",
      ...who(),
      "--reason",
      "test set-up",
      "--active",
      "false",
      "--json",
    ]);
    assert.equal(off.code, 0, off.stderr);
    assert.equal(JSON.parse(off.stdout).active, false);
    assert.equal(
      (await ctx.signed({ method: "GET", url: "/v1/partner/clients/client-1/" })).json().result.active,
      false,
    );
    const on = await run(["client", "set-active", ...who(), "--reason", "test set-up", "--active", "true"]);
    assert.equal(on.code, 0, on.stderr);
    assert.match(on.stdout, /^active:\s+true$/m);
    assert.equal(
      (await ctx.signed({ method: "GET", url: "/v1/partner/clients/client-1/" })).json().result.active,
      true,
    );
  });

  test("bad input exits 2 with one line (unknown status, flag value, missing option, unknown client); a refused token exits 1", async () => {
    for (const args of [
      ["client", "set-status", ...who(), "--reason", "test set-up", "--status", "approved"],
      ["client", "set-active", ...who(), "--reason", "test set-up", "--active", "yes"],
      ["client", "set-status", "--client", "client-1", "--status", "rejected", "--reason", "x"],
      ["client", "set-status", ...who(), "--status", "rejected"],
      ["client", "set-active", ...who(), "--active", "true"],
      [
        "client",
        "set-status",
        "--partner",
        ctx.partner.id,
        "--client",
        "nobody",
        "--status",
        "rejected",
        "--reason",
        "x",
      ],
      [
        "client",
        "set-active",
        "--partner",
        "not-a-partner",
        "--client",
        "client-1",
        "--active",
        "false",
        "--reason",
        "x",
      ],
    ]) {
      const res = await run(args);
      assert.equal(res.code, 2, `${args.join(" ")}: ${res.stderr}`);
      assert.equal(res.stdout, "");
      assert.equal(res.stderr.trim().split("\n").length, 1, res.stderr);
    }
    const unknown = await run([
      "client",
      "set-status",
      "--partner",
      ctx.partner.id,
      "--client",
      "nobody",
      "--status",
      "rejected",
      "--reason",
      "x",
    ]);
    assert.match(unknown.stderr, /has no client "nobody"/);
    const refused = await run(
      ["client", "set-active", ...who(), "--reason", "test set-up", "--active", "false"],
      "wrong-token-0123456789",
    );
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /refused the admin token/);
    const read = await ctx.signed({ method: "GET", url: "/v1/partner/clients/client-1/" });
    assert.equal(read.json().result.active, true);
    assert.equal(read.json().result.status, "verified");
  });
});
