// The CLI as an operator runs it: child processes against a sandbox started with `serve` on a
// fresh data folder (ephemeral ports), checking output, exit codes and the one-line errors.

import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { parsePublicKey } from "@counterpart/protocol";
import { assertFails, assertOk, baseEnv, closedPort, json, runCli, startSandbox } from "./testing.ts";

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function smallOrderPem(): string {
  const raw = Buffer.alloc(32);
  raw[0] = 1; // the identity point: order 1
  const der = Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), raw]);
  return `-----BEGIN PUBLIC KEY-----\n${der.toString("base64")}\n-----END PUBLIC KEY-----\n`;
}

test("counterpart CLI against a running sandbox", async (t) => {
  const { tmp, dataDir, env, endpoints, demo } = await startSandbox(t, "counterpart-cli-");
  const keysA = path.join(tmp, "keys-a");
  const keysB = path.join(tmp, "keys-b");
  let partnerId = "";
  const signAsPartner = (key: string) => ["--partner", partnerId, "--key", path.join(key, "private-key.pem")];

  await t.test("keygen writes a key pair and refuses to overwrite it", async () => {
    const [a, b] = await Promise.all([
      runCli(["keygen", "--out", keysA, "--json"], env),
      runCli(["keygen", "--out", keysB], env),
    ]);
    assertOk(a);
    assertOk(b);
    const out = json(a);
    assert.equal(out.private_key, path.join(keysA, "private-key.pem"));
    assert.equal(out.public_key, path.join(keysA, "public-key.pem"));
    assert.equal(fs.statSync(path.join(keysA, "private-key.pem")).mode & 0o777, 0o600);
    assert.ok(parsePublicKey(fs.readFileSync(path.join(keysA, "public-key.pem"), "utf8")).ok);
    assert.match(b.stdout, /private key: .*keys-b\/private-key\.pem/);

    const before = fs.readFileSync(path.join(keysA, "private-key.pem"), "utf8");
    assertFails(await runCli(["keygen", "--out", keysA], env), 2, /already exists/);
    assert.equal(fs.readFileSync(path.join(keysA, "private-key.pem"), "utf8"), before);
  });

  await t.test("partner create prints the new partner", async () => {
    const r = await runCli(
      [
        "partner",
        "create",
        "--name",
        "Acme Ltd",
        "--public-key",
        path.join(keysA, "public-key.pem"),
        "--allow-ip",
        "127.0.0.1/32",
        "--allow-ip",
        "::1/128",
        "--json",
      ],
      env,
    );
    assertOk(r);
    const p = json(r);
    assert.match(String(p.id), uuidPattern);
    assert.equal(p.name, "Acme Ltd");
    assert.equal(p.active, true);
    assert.equal(p.has_public_key, true);
    assert.deepEqual(p.allowed_ips, ["127.0.0.1/32", "::1/128"]);
    partnerId = String(p.id);
  });

  await t.test("partner list and show, as JSON and as text", async () => {
    const [listJson, listText, showJson, showText] = await Promise.all([
      runCli(["partner", "list", "--json"], env),
      runCli(["partner", "list"], env),
      runCli(["partner", "show", partnerId, "--json"], env),
      runCli(["partner", "show", partnerId], env),
    ]);
    for (const r of [listJson, listText, showJson, showText]) assertOk(r);
    const ids = (json(listJson).items as { id: string }[]).map((p) => p.id);
    assert.ok(ids.includes(partnerId) && ids.includes(demo.partner_id));
    const lines = listText.stdout.trimEnd().split("\n");
    assert.match(lines[0]!, /^ID\s+NAME\s+ACTIVE\s+KEY\s+ALLOWED IPS$/);
    assert.ok(lines.some((l) => l.startsWith(partnerId) && l.includes("Acme Ltd")));
    assert.equal(json(showJson).id, partnerId);
    assert.match(showText.stdout, new RegExp(`^id:\\s+${partnerId}$`, "m"));
    assert.match(showText.stdout, /^name:\s+Acme Ltd$/m);
    assert.match(showText.stdout, /^allowed_ips:\s+127\.0\.0\.1\/32, ::1\/128$/m);
  });

  await t.test("call signs as the new partner", async () => {
    const r = await runCli(
      ["call", "GET", "/v1/partner/asset-pairs", ...signAsPartner(keysA), "--json"],
      env,
    );
    assertOk(r);
    const out = json(r);
    assert.equal(out.status, 200);
    assert.ok(((out.body as { items: unknown[] }).items ?? []).length > 0);
  });

  await t.test("set-ips replaces the allow-list, and it is enforced", async () => {
    const narrowed = await runCli(
      ["partner", "set-ips", partnerId, "--allow-ip", "10.0.0.0/8", "--json"],
      env,
    );
    assertOk(narrowed);
    assert.deepEqual(json(narrowed).allowed_ips, ["10.0.0.0/8"]);
    const refused = await runCli(
      ["call", "GET", "/v1/partner/asset-pairs", ...signAsPartner(keysA), "--json"],
      env,
    );
    assert.equal(refused.code, 1);
    assert.equal(json(refused).status, 401);

    const restored = await runCli(
      ["partner", "set-ips", partnerId, "--allow-ip", "127.0.0.1", "::1", "--json"],
      env,
    );
    assertOk(restored);
    assert.deepEqual(json(restored).allowed_ips, ["127.0.0.1", "::1"]);
  });

  await t.test("limits sets the partner's budgets; over one, the partner commands say so", async () => {
    const set = await runCli(["partner", "limits", partnerId, "--reads", "1", "--json"], env);
    assertOk(set);
    const budgets = (json(set) as { rate_limits: Record<string, { per_minute: number; default: boolean }> })
      .rate_limits;
    assert.deepEqual(budgets.reads, { per_minute: 1, default: false });
    assert.equal(budgets.writes?.default, true);
    const first = await runCli(["call", "GET", "/v1/partner/asset-pairs", ...signAsPartner(keysA)], env);
    assertOk(first);
    const over = await runCli(["call", "GET", "/v1/partner/asset-pairs", ...signAsPartner(keysA)], env);
    assert.equal(over.code, 1);
    assert.match(over.stdout, /^HTTP 429 Too Many Requests$/m);
    assert.match(over.stdout, /^rate limit reached: nothing was applied; send it again in [0-9]+ s$/m);
    const listed = await runCli(["order", "list", ...signAsPartner(keysA)], env);
    assert.equal(listed.code, 1);
    assert.match(
      listed.stderr,
      /error 429: Too Many Requests: partner .* rate limit for this kind of request is reached; nothing was applied; try again in [0-9]+ s/,
    );
    const bad = await runCli(["partner", "limits", partnerId, "--reads", "0"], env);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--reads: expected requests per minute from 1 to 10000000, or default; got "0"/);
    const none = await runCli(["partner", "limits", partnerId], env);
    assert.equal(none.code, 2);
    const restored = await runCli(["partner", "limits", partnerId, "--reads", "default"], env);
    assertOk(restored);
    assert.match(
      restored.stdout,
      /^rate_limits: +reads 6000\/min \(default\), writes 3000\/min \(default\), quotes 1200\/min \(default\)$/m,
    );
  });

  await t.test("set-key replaces the public key", async () => {
    const r = await runCli(
      ["partner", "set-key", partnerId, "--public-key", path.join(keysB, "public-key.pem"), "--json"],
      env,
    );
    assertOk(r);
    const expected = parsePublicKey(fs.readFileSync(path.join(keysB, "public-key.pem"), "utf8"));
    assert.ok(expected.ok);
    assert.equal(json(r).public_key_pem, expected.pem);
    const [oldKey, newKey] = await Promise.all([
      runCli(["call", "GET", "/v1/partner/asset-pairs", ...signAsPartner(keysA), "--json"], env),
      runCli(["call", "GET", "/v1/partner/asset-pairs", ...signAsPartner(keysB), "--json"], env),
    ]);
    assert.equal(oldKey.code, 1);
    assert.equal(json(oldKey).status, 401);
    assertOk(newKey);
  });

  await t.test("key add, list and retire: a rotation without downtime", async () => {
    const keyFile = (name: string) => {
      const file = path.join(tmp, `${name}.pem`);
      const pair = generateKeyPairSync("ed25519", {
        publicKeyEncoding: { type: "spki", format: "pem" },
        privateKeyEncoding: { type: "pkcs8", format: "pem" },
      });
      fs.writeFileSync(file, pair.publicKey);
      return file;
    };
    const call = (keys: string) =>
      runCli(["call", "GET", "/v1/partner/asset-pairs", ...signAsPartner(keys), "--json"], env);

    const added = await runCli(
      [
        "partner",
        "key",
        "add",
        partnerId,
        "--public-key",
        path.join(keysA, "public-key.pem"),
        "--label",
        "rotation 2026",
        "--json",
      ],
      env,
    );
    assertOk(added);
    assert.equal(json(added).label, "rotation 2026");
    assert.equal(json(added).active, true);
    const newKeyId = String(json(added).id);
    const [a, b] = await Promise.all([call(keysA), call(keysB)]);
    assertOk(a);
    assertOk(b);

    const [listJson, listText] = await Promise.all([
      runCli(["partner", "key", "list", partnerId, "--json"], env),
      runCli(["partner", "key", "list", partnerId], env),
    ]);
    assertOk(listJson);
    assertOk(listText);
    const items = json(listJson).items as {
      id: string;
      label: string;
      active: boolean;
      public_key_pem: string;
    }[];
    const active = items.filter((k) => k.active);
    assert.equal(active.length, 2);
    const oldKey = active.find((k) => k.id !== newKeyId)!;
    assert.match(listText.stdout.split("\n")[0]!, /^ID\s+LABEL\s+ACTIVE\s+CREATED\s+RETIRED\s+KEY$/);
    assert.ok(listText.stdout.includes("rotation 2026"));

    // A third key is accepted, a fourth refused with the reason.
    assertOk(
      await runCli(
        ["partner", "key", "add", partnerId, "--public-key", keyFile("third"), "--label", "third"],
        env,
      ),
    );
    assertFails(
      await runCli(
        ["partner", "key", "add", partnerId, "--public-key", keyFile("fourth"), "--label", "4th"],
        env,
      ),
      2,
      /already has 3 active keys; retire one first/,
    );
    const third = (
      json(await runCli(["partner", "key", "list", partnerId, "--json"], env)).items as typeof items
    ).find((k) => k.label === "third")!;

    const retired = await runCli(["partner", "key", "retire", partnerId, oldKey.id], env);
    assertOk(retired);
    assert.match(retired.stdout, /^active:\s+false$/m);
    assertOk(await runCli(["partner", "key", "retire", partnerId, third.id, "--json"], env));
    const [oldSigner, newSigner] = await Promise.all([call(keysB), call(keysA)]);
    assert.equal(oldSigner.code, 1);
    assert.equal(json(oldSigner).status, 401);
    assertOk(newSigner);

    // Back to key B alone, for the tests below: set-key replaces every key.
    assertOk(
      await runCli(
        ["partner", "set-key", partnerId, "--public-key", path.join(keysB, "public-key.pem")],
        env,
      ),
    );
    const [afterA, afterB] = await Promise.all([call(keysA), call(keysB)]);
    assert.equal(json(afterA).status, 401);
    assertOk(afterB);
  });

  await t.test("disable refuses the partner's requests; enable accepts them again", async () => {
    const disabled = await runCli(
      ["partner", "disable", partnerId, "--reason", "contract ended", "--json"],
      env,
    );
    assertOk(disabled);
    assert.equal(json(disabled).active, false);
    const refused = await runCli(
      ["call", "GET", "/v1/partner/asset-pairs", ...signAsPartner(keysB), "--json"],
      env,
    );
    assert.equal(refused.code, 1);
    assert.deepEqual(json(refused), {
      status: 401,
      body: { code: 401, msg: "Unauthorized", msg_detail: null },
    });
    const refusedText = await runCli(
      ["call", "GET", "/v1/partner/asset-pairs", ...signAsPartner(keysB)],
      env,
    );
    assert.equal(refusedText.code, 1);
    assert.match(refusedText.stdout, /^HTTP 401 Unauthorized\n/);

    const enabled = await runCli(["partner", "enable", partnerId, "--reason", "contract renewed"], env);
    assertOk(enabled);
    assert.match(enabled.stdout, /^active:\s+true$/m);
    assertOk(await runCli(["call", "GET", "/v1/partner/asset-pairs", ...signAsPartner(keysB)], env));
  });

  await t.test("bad input: exit 2 with one line on stderr", async () => {
    const rsa = path.join(tmp, "rsa.pem");
    const rsaKeys = generateKeyPairSync("rsa", {
      modulusLength: 2048,
      publicKeyEncoding: { type: "spki", format: "pem" },
      privateKeyEncoding: { type: "pkcs8", format: "pem" },
    });
    fs.writeFileSync(rsa, rsaKeys.publicKey);
    const small = path.join(tmp, "small-order.pem");
    fs.writeFileSync(small, smallOrderPem());
    const pub = path.join(keysA, "public-key.pem");
    const unknown = "00000000-0000-4000-8000-000000000000";
    const create = (...args: string[]) => ["partner", "create", "--name", "Bad", ...args];
    const cases: [string[], RegExp][] = [
      [
        create("--public-key", path.join(tmp, "missing.pem")),
        /cannot read public key file .*missing\.pem: no such file/,
      ],
      [create("--public-key", tmp), /cannot read public key file .*: is a directory/],
      [create("--public-key", rsa), /rsa\.pem is not an Ed25519 public key/],
      [create("--public-key", small), /small-order/],
      [create("--public-key", path.join(keysA, "private-key.pem")), /is not a public key PEM/],
      [
        create("--public-key", pub, "--allow-ip", "10.0.0.0/33"),
        /"10\.0\.0\.0\/33" is not an IP address or CIDR range/,
      ],
      [["partner", "set-key", partnerId, "--public-key", small], /small-order/],
      [["partner", "set-ips", partnerId, "--allow-ip", "127.0.0.1", "nonsense"], /"nonsense" is not an IP/],
      [["partner", "create", "--public-key", pub], /required option '--name <name>' not specified/],
      [["partner", "set-ips", partnerId], /required option '--allow-ip <cidr\.\.\.>' not specified/],
      [["partner", "show"], /missing required argument 'id'/],
      [["partner", "show", unknown], new RegExp(`unknown partner ${unknown}`)],
      [["partner", "enable", unknown, "--reason", "x"], /unknown partner/],
      [["partner", "disable", partnerId], /required option '--reason <text>' not specified/],
      [["partner", "show", "a".repeat(100)], /unknown partner a{100}$/],
      [["partner", "set-key", "not-a-uuid", "--public-key", pub], /unknown partner not-a-uuid/],
      [["partner", "key", "list", unknown], new RegExp(`unknown partner ${unknown}`)],
      [["partner", "key", "retire", unknown, unknown], new RegExp(`unknown partner ${unknown}`)],
      [["partner", "key", "retire", partnerId, unknown], new RegExp(`unknown key ${unknown} of partner`)],
      [["partner", "key", "add", partnerId, "--public-key", pub], /required option '--label <label>'/],
      [["partner", "key", "add", partnerId, "--public-key", small, "--label", "x"], /small-order/],
      // Checked by the admin API (422), reported with its message.
      [create("--public-key", pub).map((a) => (a === "Bad" ? "x".repeat(300) : a)), /name/i],
      [["call", "POST", "/v1/partner/asset-pairs", "--data", "{bad"], /--data is not valid JSON/],
      [["call", "GET", "/v1/partner/asset-pairs", "--partner", partnerId], /--key FILE is required/],
      [["call", "GET", "/v1/partner/asset-pairs", ...signAsPartner(tmp)], /cannot read private key file/],
      [["call", "GET", "v1/partner/asset-pairs"], /PATH must start with "\/"/],
      [["partner", "frobnicate"], /unknown command 'frobnicate'/],
    ];
    const runs = await Promise.all(cases.map(([args]) => runCli(args, env)));
    runs.forEach((r, i) => {
      assertFails(r, 2, cases[i]![1]);
    });

    // None of them created a partner; the 422 above reached the service and was refused.
    const list = json(await runCli(["partner", "list", "--json"], env));
    assert.equal((list.items as unknown[]).length, 2);
  });

  await t.test("--json failures print one JSON object too", async () => {
    const r = await runCli(["partner", "show", "00000000-0000-4000-8000-000000000000", "--json"], env);
    assertFails(r, 2, /unknown partner/);
    assert.deepEqual(json(r), {
      error: { exit_code: 2, message: "unknown partner 00000000-0000-4000-8000-000000000000" },
    });
  });

  await t.test("other failures exit 1: refused admin token, unreachable service", async () => {
    const port = await closedPort();
    const [wrongFlag, wrongEnv, down, callDown] = await Promise.all([
      runCli(["partner", "list", "--admin-token", "not-the-token-at-all"], env),
      runCli(["partner", "list"], { ...env, ADMIN_TOKEN: "not-the-token-at-all" }),
      runCli(["partner", "list", "--admin-url", `http://127.0.0.1:${port}`], env),
      runCli(["call", "GET", "/v1/partner/asset-pairs", "--url", `http://127.0.0.1:${port}`], env),
    ]);
    assertFails(wrongFlag, 1, /refused the admin token \(401 Unauthorized\); check --admin-token/);
    assertFails(wrongEnv, 1, /refused the admin token .*check ADMIN_TOKEN/);
    assertFails(down, 1, /cannot reach the admin API at .*ECONNREFUSED/);
    assertFails(callDown, 1, /cannot reach the partner API at .*ECONNREFUSED/);
  });

  await t.test("admin address and token from flags and environment instead of the data folder", async () => {
    const token = fs.readFileSync(path.join(dataDir, "admin-token"), "utf8").trim();
    const elsewhere = baseEnv(path.join(tmp, "no-such-folder"));
    const [flags, fromEnv, missing] = await Promise.all([
      runCli(
        ["partner", "list", "--json", "--admin-url", endpoints.admin_url, "--admin-token", token],
        elsewhere,
      ),
      runCli(["partner", "list", "--json"], {
        ...elsewhere,
        COUNTERPART_ADMIN_URL: endpoints.admin_url,
        ADMIN_TOKEN: token,
      }),
      runCli(["partner", "list"], elsewhere),
    ]);
    assertOk(flags);
    assertOk(fromEnv);
    assert.equal((json(flags).items as unknown[]).length, 2);
    assertFails(missing, 2, /no admin API address: pass --admin-url/);
  });

  await t.test("call as the sandbox demo partner, by default", async () => {
    const [asJson, asText] = await Promise.all([
      runCli(["call", "GET", "/v1/partner/asset-pairs", "--json"], env),
      runCli(["call", "get", "/v1/partner/asset-pairs"], env),
    ]);
    assertOk(asJson);
    const out = json(asJson);
    assert.equal(out.status, 200);
    const items = (out.body as { items: { id: string }[] }).items;
    assert.ok(items.some((p) => p.id === "BTC-AED"));
    assertOk(asText);
    assert.match(asText.stdout, /^HTTP 200 OK\n\{\n {2}"items": \[/);
  });

  await t.test("call sends the body exactly as given and prints the server's answer", async () => {
    // Odd spacing: the signature covers these exact bytes, so the service gets past
    // authentication and answers for the route (405 here, 404 for an unknown path), not 401.
    const data = '{ "asset_pair_id" :  "BTC-AED" }';
    const [known, unknownPath] = await Promise.all([
      runCli(["call", "POST", "/v1/partner/asset-pairs", "--data", data, "--json"], env),
      runCli(
        ["call", "POST", "/v1/partner/no-such-thing", "--data", data, "--url", endpoints.partner_url],
        env,
      ),
    ]);
    assert.equal(known.code, 1);
    assert.deepEqual(json(known), {
      status: 405,
      body: { code: 405, msg: "Method Not Allowed", msg_detail: null },
    });
    // The partner commands' rule: a 404 is the caller's to fix (exit 2), as `order get` exits.
    assert.equal(unknownPath.code, 2);
    assert.match(unknownPath.stdout, /^HTTP 404 Not Found\n/);
  });

  await t.test("migrate refuses the folder the sandbox holds, and migrates a fresh one", async () => {
    const fresh = path.join(tmp, "fresh");
    const [locked, first] = await Promise.all([
      runCli(["migrate"], env),
      runCli(["migrate", "--json"], baseEnv(fresh)),
    ]);
    assertFails(locked, 2, /in use by process/);
    assertOk(first);
    const applied = json(first).applied as string[];
    assert.ok(applied.length > 0 && applied[0] === "0001_partners_and_catalog", first.stdout);
    const again = await runCli(["migrate"], baseEnv(fresh));
    assertOk(again);
    assert.match(again.stdout, /up to date/);
  });
});
