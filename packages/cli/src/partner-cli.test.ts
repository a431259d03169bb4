// The partner commands (client, document, deposit, withdraw, balance, quote, execute, order) as a
// partner runs them: child processes against a sandbox started with `serve`, signing as its demo
// partner (found in DATA_DIR) or with --partner/--key. Output with and without --json, the
// service's values unchanged, exit 2 with one stderr line for what the caller must fix, 1 for the rest.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { generateKeyPair } from "@counterpart/protocol";
import { toMoney } from "@counterpart/sdk";
import { clientPayload, sampleFile } from "../../server/src/testing/fixtures.ts";
import { assertFails, assertOk, closedPort, json, runCli, startSandbox } from "./testing.ts";

/** A client payload file without the fields the test gives as flags (id, e-mail). */
const { partner_client_id: _id, email: _email, ...clientFile } = clientPayload(2, { name: "Amal Cli" });

const money = (value: unknown) => toMoney(String(value));

test("partner commands against a running sandbox", async (t) => {
  // Manual prices that stay fresh for the whole test: amounts can be checked exactly.
  const { tmp, env, demo } = await startSandbox(t, "counterpart-partner-cli-", {
    env: { PRICE_STALE_AFTER_S: "3600" },
  });
  const cli = (...args: string[]) => runCli(args, env);
  const pcid = "cli-client-1";
  const pngFile = path.join(tmp, "id.png");
  fs.writeFileSync(pngFile, sampleFile("png", 256));
  const payloadFile = path.join(tmp, "client.json");
  fs.writeFileSync(payloadFile, JSON.stringify(clientFile));

  await t.test("client create from a file plus flags, then get and list", async () => {
    const created = await cli(
      "client",
      "create",
      "--file",
      payloadFile,
      "--client",
      pcid,
      "--email",
      "amal.cli@example.com",
      "--purpose",
      "long_term_investment",
      "short_term_trading",
      "--json",
    );
    assertOk(created);
    const c = json(created);
    assert.equal(c.partner_client_id, pcid);
    assert.equal(c.email, "amal.cli@example.com");
    assert.equal(c.name, "Amal Cli");
    assert.deepEqual(c.account_purpose, ["long_term_investment", "short_term_trading"]);
    assert.equal(c.status, "verified");
    assert.equal(c.active, true);

    const [get, getJson, list, listJson] = await Promise.all([
      cli("client", "get", "--client", pcid),
      cli("client", "get", "--client", pcid, "--json"),
      cli("client", "list"),
      cli("client", "list", "--status", "verified", "--all", "--json"),
    ]);
    for (const r of [get, getJson, list, listJson]) assertOk(r);
    assert.match(get.stdout, new RegExp(`^partner_client_id: +${pcid}$`, "m"));
    assert.match(get.stdout, /^status: +verified$/m);
    assert.equal(json(getJson).id, c.id);
    assert.match(list.stdout, /^PARTNER_CLIENT_ID +NAME +STATUS/m);
    assert.match(list.stdout, new RegExp(`^${pcid} +Amal Cli +verified +yes`, "m"));
    assert.match(list.stdout, /^page 1 of 1 \(1 client in all\)$/m);
    const all = json(listJson) as { items: { partner_client_id: string }[]; total: number };
    assert.deepEqual(
      all.items.map((i) => i.partner_client_id),
      [pcid],
    );
  });

  await t.test("client update: flags over the current record, or a full payload from a file", async () => {
    const byFlag = await cli("client", "update", "--client", pcid, "--city", "Abu Dhabi", "--json");
    assertOk(byFlag);
    const u = json(byFlag) as { address: { city: string; street: string }; email: string };
    assert.equal(u.address.city, "Abu Dhabi");
    assert.equal(u.address.street, "1 Sheikh Zayed Rd");
    assert.equal(u.email, "amal.cli@example.com");

    // The output of `client get --json`, edited, is a valid update payload.
    const record = json(await cli("client", "get", "--client", pcid, "--json"));
    const editedFile = path.join(tmp, "edited.json");
    fs.writeFileSync(editedFile, JSON.stringify({ ...record, name: "Amal Cli Haddad" }));
    const byFile = await cli("client", "update", "--client", pcid, "--file", editedFile);
    assertOk(byFile);
    assert.match(byFile.stdout, /^name: +Amal Cli Haddad$/m);
    assert.match(byFile.stdout, /^address: +Apt 12, 1 Sheikh Zayed Rd, Abu Dhabi 00000$/m);

    fs.writeFileSync(editedFile, JSON.stringify({ ...record, birth_date: "1991-01-01" }));
    assertFails(
      await cli("client", "update", "--client", pcid, "--file", editedFile),
      2,
      /birth_date cannot be changed by an update/,
    );
  });

  await t.test("deactivate blocks funding (2010) until activate", async () => {
    const off = await cli("client", "deactivate", "--client", pcid, "--json");
    assertOk(off);
    assert.deepEqual(json(off), { partner_client_id: pcid, active: false });
    assert.equal(json(await cli("client", "get", "--client", pcid, "--json")).active, false);
    assertFails(
      await cli("deposit", "--client", pcid, "--asset", "AED", "--amount", "10", "--ref", "blocked-1"),
      2,
      /error 2010: The client is deactivated/,
    );
    const on = await cli("client", "activate", "--client", pcid);
    assertOk(on);
    assert.match(on.stdout, /is active/);
    assert.equal(json(await cli("client", "get", "--client", pcid, "--json")).active, true);
  });

  await t.test("document upload, list and get", async () => {
    const up = await cli(
      "document",
      "upload",
      "--client",
      pcid,
      "--type",
      "government_id",
      "--front",
      pngFile,
      "--back",
      pngFile,
      "--json",
    );
    assertOk(up);
    assert.equal(up.stderr, "", "no progress line when stderr is not a terminal");
    const doc = json(up) as { id: number; type: string; front_file: string; back_file: string | null };
    assert.equal(doc.type, "government_id");
    assert.ok(doc.back_file !== null);

    const [list, listJson, get] = await Promise.all([
      cli("document", "list", "--client", pcid),
      cli("document", "list", "--client", pcid, "--type", "government_id", "--json"),
      cli("document", "get", String(doc.id), "--client", pcid, "--json"),
    ]);
    for (const r of [list, listJson, get]) assertOk(r);
    assert.match(list.stdout, new RegExp(`^${doc.id} +government_id +front\\+back`, "m"));
    const page = json(listJson) as { items: { id: number }[]; total: number };
    assert.equal(page.total, 1);
    assert.equal(page.items[0]!.id, doc.id);
    assert.equal(json(get).id, doc.id);
  });

  await t.test("upload progress is drawn on stderr when it is a terminal", async () => {
    // Makes stderr claim to be a terminal in the child, as it is in an interactive shell.
    const tty = { ...env, NODE_OPTIONS: "--import=data:text/javascript,process.stderr.isTTY=true" };
    const r = await runCli(
      ["document", "upload", "--client", pcid, "--type", "proof_of_address", "--front", pngFile, "--json"],
      tty,
    );
    assertOk(r);
    assert.match(r.stderr, /\ruploading id\.png: 100% \(\d+ B of \d+ B\)/);
    assert.equal(json(r).type, "proof_of_address", "stdout holds only the JSON object");
  });

  await t.test("deposit, withdraw and balance", async () => {
    const dep = await cli(
      "deposit",
      "--client",
      pcid,
      "--asset",
      "AED",
      "--amount",
      "10000.50",
      "--ref",
      "cli-dep-1",
      "--json",
    );
    assertOk(dep);
    const d = json(dep) as { order: Record<string, unknown>; replayed: boolean };
    assert.equal(d.replayed, false);
    assert.equal(d.order.type, "deposit");
    assert.equal(d.order.status, "completed");
    assert.equal(money(d.order.debit), money("10000.50"));

    // The same request again: the SDK finds the order the reference names; nothing moves twice.
    const again = await cli(
      "deposit",
      "--client",
      pcid,
      "--asset",
      "AED",
      "--amount",
      "10000.50",
      "--ref",
      "cli-dep-1",
    );
    assertOk(again);
    assert.match(again.stdout, /^replayed: +yes/m);

    const wd = await cli(
      "withdraw",
      "--client",
      pcid,
      "--asset",
      "AED",
      "--amount",
      "200.25",
      "--ref",
      "cli-wd-1",
    );
    assertOk(wd);
    assert.match(wd.stdout, /^type: +withdrawal$/m);
    assert.match(wd.stdout, /^credit: +\S+ AED$/m);

    const [one, plain, all] = await Promise.all([
      cli("balance", "--client", pcid, "--asset", "AED", "--json"),
      cli("balance", "--client", pcid, "--asset", "AED", "--plain"),
      cli("balance", "--client", pcid),
    ]);
    for (const r of [one, plain, all]) assertOk(r);
    assert.equal(money(json(one).available_balance), money("9800.25"));
    assert.match(plain.stdout, /^available_balance: +9800\.25000000$/m);
    assert.match(all.stdout, /^ASSET +BALANCE +AVAILABLE/m);
    assert.match(all.stdout, /^AED +\S+ +\S+/m);
    assert.match(all.stdout, /^BTC /m);
  });

  let buyId = 0;
  await t.test("quote and execute a buy", async () => {
    const q = await cli(
      "quote",
      "--client",
      pcid,
      "--pair",
      "BTC-AED",
      "--side",
      "buy",
      "--amount",
      "0.01",
      "--json",
    );
    assertOk(q);
    const quote = json(q) as {
      token: string;
      market_price: string;
      base_amount: string;
      quote_amount: string;
    };
    assert.match(quote.token, /^qt_/);
    assert.equal(money(quote.base_amount), money("0.01"));

    const ex = await cli("execute", "--client", pcid, "--token", quote.token, "--ref", "cli-buy-1", "--json");
    assertOk(ex);
    const { order } = json(ex) as { order: Record<string, unknown> };
    assert.equal(order.type, "buy");
    assert.equal(order.source, "market");
    assert.equal(order.status, "completed");
    assert.equal(order.debit_asset_id, "BTC");
    assert.equal(money(order.debit), money("0.01"));
    assert.equal(order.price, quote.market_price, "executed at the quoted price");
    assert.equal(order.credit, quote.quote_amount);
    buyId = Number(order.id);

    const human = await cli(
      "quote",
      "--client",
      pcid,
      "--pair",
      "BTC-AED",
      "--side",
      "sell",
      "--amount",
      "0.005",
    );
    assertOk(human);
    assert.match(human.stdout, /^base_amount: +\S+ BTC$/m);
    assert.match(
      human.stdout,
      /execute it within \d+ s: counterpart execute --client cli-client-1 --token qt_/,
    );
  });

  await t.test("order get by id and by reference; order list, one page and --all", async () => {
    const [byId, byRef, human, page, everything, trades] = await Promise.all([
      cli("order", "get", String(buyId), "--json"),
      cli("order", "get", "--ref", "cli-buy-1", "--json"),
      cli("order", "get", String(buyId), "--plain"),
      cli("order", "list", "--client", pcid, "--page-size", "2", "--json"),
      cli("order", "list", "--client", pcid, "--all", "--page-size", "1", "--json"),
      cli("order", "list", "--client", pcid, "--source", "market", "--status", "completed"),
    ]);
    for (const r of [byId, byRef, human, page, everything, trades]) assertOk(r);
    assert.equal(json(byId).id, buyId);
    assert.equal(json(byRef).id, buyId);
    assert.match(human.stdout, /^debit: +0\.01000000 BTC$/m);
    const p = json(page) as { items: unknown[]; total: number; page: number; page_size: number };
    assert.equal(p.items.length, 2);
    assert.equal(p.total, 3);
    assert.equal(p.page_size, 2);
    // One order a page: --all walks three pages.
    const e = json(everything) as { items: { type: string; partner_order_ref: string }[]; total: number };
    assert.equal(e.total, 3);
    assert.deepEqual(
      e.items.map((o) => o.type),
      ["buy", "withdrawal", "deposit"],
    );
    assert.match(trades.stdout, /^ID +ORDER_NO +REF/m);
    assert.match(trades.stdout, /cli-buy-1 +cli-client-1 +buy +completed/);
    assert.doesNotMatch(trades.stdout, /deposit/);
  });

  await t.test("bad input: exit 2 and one stderr line", async () => {
    const cases: [string[], RegExp][] = [
      [["deposit", "--asset", "AED", "--amount", "1", "--ref", "x-1"], /required option '--client/],
      [
        ["deposit", "--client", "nobody", "--asset", "AED", "--amount", "1", "--ref", "x-2"],
        /^counterpart: error 2008: Invalid client ID$/,
      ],
      [
        ["deposit", "--client", pcid, "--asset", "AED", "--amount", "-5", "--ref", "x-3"],
        /^counterpart: error 422: Validation Error: amount: /,
      ],
      [
        ["withdraw", "--client", pcid, "--asset", "AED", "--amount", "999999", "--ref", "x-4"],
        /error 3005: /,
      ],
      [
        ["quote", "--client", pcid, "--pair", "BTC-AED", "--side", "sideways", "--amount", "1"],
        /sideways.*invalid/,
      ],
      [
        ["quote", "--client", pcid, "--pair", "BTC-AED", "--side", "buy", "--amount", "100"],
        /error 4003: .*\(limit /,
      ],
      [["execute", "--client", pcid, "--token", "qt_nope"], /error 422: /],
      [["order", "get", "999999"], /error 404: Not Found: GET \/v1\/partner\/orders\/999999/],
      [["order", "get"], /give the order's ID or --ref REF/],
      [["order", "list", "--page-size", "500"], /page_size must be an integer from 1 to 100/],
      [["client", "get", "--client", "nobody"], /error 2008: /],
      [["client", "create", "--data", "{bad"], /--data is not valid JSON/],
      [
        ["document", "upload", "--client", pcid, "--type", "government_id", "--front", payloadFile],
        /error 422: .*front_file/,
      ],
      [["document", "get", "0", "--client", pcid], /document id must be a positive whole number/],
    ];
    const runs = await Promise.all(cases.map(([args]) => cli(...args)));
    for (const [i, r] of runs.entries()) assertFails(r, 2, cases[i]![1]);

    const asJson = await cli(
      "deposit",
      "--client",
      "nobody",
      "--asset",
      "AED",
      "--amount",
      "1",
      "--ref",
      "x-5",
      "--json",
    );
    assertFails(asJson, 2, /error 2008/);
    const { error } = json(asJson) as { error: Record<string, unknown> };
    assert.equal(error.exit_code, 2);
    assert.equal(error.status, 400);
    assert.equal(error.code, 2008);
    assert.equal(error.msg, "Invalid client ID");
  });

  await t.test("failures the caller cannot fix by changing the request: exit 1", async () => {
    const keys = generateKeyPair();
    const keyFile = path.join(tmp, "other-key.pem");
    fs.writeFileSync(keyFile, keys.privateKeyPem, { mode: 0o600 });
    const port = await closedPort();
    const signAs = { COUNTERPART_PARTNER_ID: demo.partner_id, COUNTERPART_KEY_FILE: keyFile };
    const [down, downByEnv, refused, refusedByEnv] = await Promise.all([
      cli("balance", "--client", pcid, "--url", `http://127.0.0.1:${port}`),
      runCli(["balance", "--client", pcid], { ...env, COUNTERPART_URL: `http://127.0.0.1:${port}` }),
      cli("balance", "--client", pcid, "--partner", demo.partner_id, "--key", keyFile),
      runCli(["balance", "--client", pcid, "--json"], { ...env, ...signAs }),
    ]);
    for (const r of [down, downByEnv]) {
      assertFails(
        r,
        1,
        /cannot reach the partner API at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\); is the service running\?/,
      );
    }
    for (const r of [refused, refusedByEnv]) assertFails(r, 1, /error 401: Unauthorized: .*refused partner/);
    const { error } = json(refusedByEnv) as { error: Record<string, unknown> };
    assert.equal(error.exit_code, 1);
    assert.equal(error.status, 401);
  });

  await t.test(
    "the key as PEM text in COUNTERPART_PRIVATE_KEY, as the SDK's optionsFromEnv reads it",
    async () => {
      const pem = fs.readFileSync(path.join(env.DATA_DIR!, "demo-partner/private-key.pem"), "utf8");
      const byText = { ...env, COUNTERPART_PARTNER_ID: demo.partner_id, COUNTERPART_PRIVATE_KEY: pem };
      const other = path.join(tmp, "unregistered-key.pem");
      fs.writeFileSync(other, generateKeyPair().privateKeyPem, { mode: 0o600 });
      const [signed, textFirst, notPem, noPartner, noKey] = await Promise.all([
        runCli(["balance", "--client", pcid, "--asset", "AED", "--json"], byText),
        // Both set: the text wins, as in the SDK.
        runCli(["balance", "--client", pcid, "--asset", "AED", "--json"], {
          ...byText,
          COUNTERPART_KEY_FILE: other,
        }),
        runCli(["balance", "--client", pcid], { ...byText, COUNTERPART_PRIVATE_KEY: "not a key" }),
        runCli(["balance", "--client", pcid], { ...env, COUNTERPART_PRIVATE_KEY: pem }),
        runCli(["balance", "--client", pcid], { ...env, COUNTERPART_PARTNER_ID: demo.partner_id }),
      ]);
      for (const r of [signed, textFirst]) {
        assertOk(r);
        assert.equal(json(r).asset_id, "AED");
      }
      assertFails(notPem, 2, /COUNTERPART_PRIVATE_KEY is not an unencrypted private key PEM/);
      assertFails(
        noPartner,
        2,
        /--partner ID is required with COUNTERPART_PRIVATE_KEY \(or set COUNTERPART_PARTNER_ID\)/,
      );
      assertFails(
        noKey,
        2,
        /--key FILE is required with --partner \(or set COUNTERPART_KEY_FILE, or COUNTERPART_PRIVATE_KEY/,
      );
    },
  );

  await t.test("the operator's client commands share the group", async () => {
    const r = await cli(
      "client",
      "set-status",
      "--partner",
      demo.partner_id,
      "--client",
      pcid,
      "--status",
      "verified",
      "--reason",
      "documents checked",
      "--json",
    );
    assertOk(r);
    assert.equal(json(r).status, "verified");
    const help = await cli("client", "--help");
    assertOk(help);
    for (const name of [
      "create",
      "get",
      "list",
      "update",
      "activate",
      "deactivate",
      "set-status",
      "set-active",
    ]) {
      assert.match(help.stdout, new RegExp(`^  ${name} `, "m"));
    }
  });
});
