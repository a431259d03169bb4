// The operator's catalog, trading and ledger commands (asset, pair, price, fee, ledger) as an
// operator runs them: child processes against a sandbox started with `serve`, each command's effect
// checked through the public API, the partner API (`counterpart call` as the demo partner) or the
// admin API, and bad input refused with exit 2 and one line on stderr.

import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { test } from "node:test";
import { formatLedgerDifferences } from "./operator/admin-output.ts";
import { assertFails, assertOk, closedPort, json, type Run, runCli, startSandbox } from "./testing.ts";

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

test("counterpart asset, pair, price, fee and ledger against a running sandbox", async (t) => {
  const { dataDir, env, endpoints, demo } = await startSandbox(t, "counterpart-operator-");
  const partner = demo.partner_id;
  const adminToken = fs.readFileSync(path.join(dataDir, "admin-token"), "utf8").trim();
  const cli = (...args: string[]) => runCli(args, env);

  /** An unsigned public API read. */
  const publicGet = async (urlPath: string): Promise<Answer> => {
    const res = await fetch(`${endpoints.partner_url}${urlPath}`);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  /** A signed partner API read as the sandbox's demo partner, through `counterpart call`. */
  const partnerGet = async (urlPath: string): Promise<Answer> => {
    const out = json(await cli("call", "GET", urlPath, "--json"));
    return { status: out.status as number, body: out.body as Record<string, unknown> };
  };
  const pairSeen = async (id: string) => {
    const answer = await partnerGet(`/v1/partner/asset-pairs/${id}`);
    assert.equal(answer.status, 200, JSON.stringify(answer));
    return answer.body.result as { id: string; buy: string; sell: string; tradable: boolean };
  };
  /** The partner's stored fees, through the admin API (a change of nothing answers them). */
  const partnerFees = async () => {
    const res = await fetch(`${endpoints.admin_url}/admin/partners/${partner}/fees`, {
      method: "PUT",
      headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" },
      body: "{}",
    });
    assert.equal(res.status, 200);
    return ((await res.json()) as { result: unknown }).result;
  };

  await t.test("asset upsert changes the given fields, visible in the public catalog", async () => {
    const [asJson, asText] = await Promise.all([
      cli(
        "asset",
        "upsert",
        "SOL",
        "--name",
        "Solana (test)",
        "--decimals",
        "8",
        "--published",
        "false",
        "--depositable",
        "true",
        "--withdrawable",
        "true",
        "--usd-rate",
        "150.25",
        "--json",
      ),
      cli("asset", "upsert", "ETH", "--withdrawable", "true"),
    ]);
    assertOk(asJson);
    const expected = {
      id: "SOL",
      type: "crypto",
      name_en: "Solana (test)",
      decimal_places: 8,
      published: false,
      depositable: true,
      withdrawable: true,
    };
    assert.deepEqual(json(asJson), { ...expected, created: false });
    assertOk(asText);
    assert.match(asText.stdout, /^id:\s+ETH$/m);
    assert.match(asText.stdout, /^withdrawable:\s+true$/m);
    assert.match(asText.stdout, /^created:\s+false$/m);

    const [sol, eth] = await Promise.all([
      publicGet("/v1/public/assets/SOL"),
      publicGet("/v1/public/assets/ETH"),
    ]);
    assert.deepEqual(sol, { status: 200, body: { result: expected } });
    assert.equal((eth.body.result as { withdrawable: boolean }).withdrawable, true);
    assert.equal((eth.body.result as { depositable: boolean }).depositable, false, "untouched");
    // SOL is traded in pairs: its decimal places and its type stay as they are.
    for (const flags of [
      ["--decimals", "6"],
      ["--type", "fiat"],
    ]) {
      assertFails(await cli("asset", "upsert", "SOL", ...flags), 2, /keeps its type and decimal places/);
    }
    assert.deepEqual(await publicGet("/v1/public/assets/SOL"), { status: 200, body: { result: expected } });
  });

  await t.test("asset upsert creates a new asset", async () => {
    const r = await cli(
      "asset",
      "upsert",
      "DOGE",
      "--type",
      "crypto",
      "--name",
      "Dogecoin",
      "--published",
      "true",
      "--usd-rate",
      "none",
      "--json",
    );
    assertOk(r);
    const expected = {
      id: "DOGE",
      type: "crypto",
      name_en: "Dogecoin",
      decimal_places: 8,
      published: true,
      depositable: false,
      withdrawable: false,
    };
    assert.deepEqual(json(r), { ...expected, created: true });
    assert.deepEqual(await publicGet("/v1/public/assets/DOGE"), { status: 200, body: { result: expected } });
  });

  await t.test("pair upsert changes a pair's settings; --tradable shows in the partner API", async () => {
    const r = await cli(
      "pair",
      "upsert",
      "ETH-USD",
      "--tradable",
      "false",
      "--min-volume",
      "0.01",
      "--max-volume",
      "50",
      "--lifetime",
      "30",
      "--json",
    );
    assertOk(r);
    const out = json(r);
    assert.equal(out.id, "ETH-USD");
    assert.equal(out.tradable, false);
    assert.equal(out.min_volume, "0.01000000");
    assert.equal(out.max_volume, "50.00000000");
    assert.equal(out.lifetime_s, 30);
    // Not tradable: a quote would answer code 4000; the partner sees it in the pair's flag.
    assert.equal((await pairSeen("ETH-USD")).tradable, false);

    const back = await cli("pair", "upsert", "ETH-USD", "--tradable", "true");
    assertOk(back);
    assert.match(back.stdout, /^tradable:\s+true$/m);
    assert.match(back.stdout, /^lifetime_s:\s+30$/m);
    assert.equal((await pairSeen("ETH-USD")).tradable, true);
  });

  await t.test("pair upsert creates a pair of two catalog assets, pinned until priced", async () => {
    const r = await cli("pair", "upsert", "DOGE-USD", "--tradable", "true", "--json");
    assertOk(r);
    const out = json(r);
    assert.equal(out.id, "DOGE-USD");
    assert.equal(out.base_id, "DOGE");
    assert.equal(out.quote_id, "USD");
    assert.equal(out.price_pinned, true);
    assert.equal((await pairSeen("DOGE-USD")).id, "DOGE-USD");
  });

  await t.test(
    "pair upsert --partner --available hides a pair from one partner and shows it again",
    async () => {
      const hidden = await cli(
        "pair",
        "upsert",
        "SOL-AED",
        "--partner",
        partner,
        "--available",
        "false",
        "--json",
      );
      assertOk(hidden);
      assert.deepEqual(json(hidden), {
        partner_id: partner,
        pair_id: "SOL-AED",
        available: false,
        fee_rate: null,
      });
      const [one, list] = await Promise.all([
        partnerGet("/v1/partner/asset-pairs/SOL-AED"),
        partnerGet("/v1/partner/asset-pairs"),
      ]);
      assert.equal(one.status, 404);
      const ids = (list.body.items as { id: string }[]).map((p) => p.id);
      assert.ok(!ids.includes("SOL-AED") && ids.includes("SOL-USD"), ids.join(","));

      const shown = await cli("pair", "upsert", "SOL-AED", "--partner", partner, "--available", "true");
      assertOk(shown);
      assert.match(shown.stdout, /^available:\s+true$/m);
      assert.equal((await pairSeen("SOL-AED")).id, "SOL-AED");
    },
  );

  await t.test("price set pins a pair to prices set by hand", async () => {
    const [asJson, at] = await Promise.all([
      cli(
        "price",
        "set",
        "BTC-AED",
        "--reason",
        "feed outage",
        "--buy",
        "350000",
        "--sell",
        "349000.5",
        "--json",
      ),
      cli(
        "price",
        "set",
        "DOGE-USD",
        "--reason",
        "feed outage",
        "--buy",
        "0.25",
        "--sell",
        "0.24",
        "--at",
        "2026-01-02T03:04:05Z",
      ),
    ]);
    assertOk(asJson);
    const out = json(asJson);
    assert.equal(out.buy, "350000.00000000");
    assert.equal(out.sell, "349000.50000000");
    assert.equal(out.price_pinned, true);
    assertOk(at);
    assert.match(at.stdout, /^prices:\s+pinned \(set by hand\)$/m);
    assert.match(at.stdout, /^price_at:\s+2026-01-02T03:04:05(\.0+)?Z$/m);

    const [btc, doge] = await Promise.all([pairSeen("BTC-AED"), pairSeen("DOGE-USD")]);
    assert.equal(btc.buy, "350000.00000000");
    assert.equal(btc.sell, "349000.50000000");
    assert.equal(doge.buy, "0.25000000");
    assert.equal(doge.sell, "0.24000000");
  });

  await t.test(
    "price resume with no feed running (PRICE_FEED=manual): refused, the pair stays as set",
    async () => {
      const [asJson, asText] = await Promise.all([
        cli("price", "resume", "BTC-AED", "--json"),
        cli("price", "resume", "DOGE-USD"),
      ]);
      for (const r of [asJson, asText]) {
        assertFails(r, 2, /No price feed runs \(PRICE_FEED=manual\).*set its prices by hand instead$/);
      }
      const [btc, doge] = await Promise.all([pairSeen("BTC-AED"), pairSeen("DOGE-USD")]);
      assert.equal(btc.buy, "350000.00000000");
      assert.equal(doge.buy, "0.25000000");
    },
  );

  await t.test("fee set: a partner's rate for one pair, its default rate and VAT", async () => {
    const [pairRate, defaults] = await Promise.all([
      cli("fee", "set", "--partner", partner, "--pair", "BTC-AED", "--rate", "0.004", "--json"),
      cli("fee", "set", "--partner", partner, "--rate", "0.003", "--vat-percentage", "5", "--json"),
    ]);
    assertOk(pairRate);
    assert.deepEqual(json(pairRate), {
      partner_id: partner,
      pair_id: "BTC-AED",
      available: true,
      fee_rate: "0.00400000",
    });
    assertOk(defaults);
    assert.deepEqual(json(defaults), {
      partner_id: partner,
      fee_rate: "0.00300000",
      vat_percentage: "5.0000",
    });
    assert.deepEqual(await partnerFees(), { fee_rate: "0.00300000", vat_percentage: "5.0000" });

    const [cleared, noVat] = await Promise.all([
      cli("fee", "set", "--partner", partner, "--pair", "BTC-AED", "--rate", "none", "--json"),
      cli("fee", "set", "--partner", partner, "--vat-percentage", "none"),
    ]);
    assertOk(cleared);
    assert.equal(json(cleared).fee_rate, null);
    assertOk(noVat);
    assert.match(noVat.stdout, /^vat_percentage:\s+\(none\)$/m);
    assert.deepEqual(await partnerFees(), { fee_rate: "0.00300000", vat_percentage: null });
  });

  await t.test("ledger check on a clean ledger: exit 0", async () => {
    const [asJson, asText] = await Promise.all([cli("ledger", "check", "--json"), cli("ledger", "check")]);
    assertOk(asJson);
    assert.deepEqual(json(asJson), { ok: true, differences: [] });
    assertOk(asText);
    assert.equal(asText.stdout, "ledger: clean\n");
    assert.equal(asText.stderr, "");
  });

  await t.test("bad input: exit 2 with one line on stderr, nothing changed", async () => {
    const unknown = "00000000-0000-4000-8000-000000000000";
    const cases: [string[], RegExp][] = [
      [["asset", "upsert", "btc"], /asset id "btc": Asset ids are 2 to 10 upper-case letters or digits/],
      [["asset", "upsert", "NEWX", "--published", "true"], /--type: A new asset needs type and name_en/],
      [["asset", "upsert", "BTC", "--decimals", "9"], /--decimals: .*8/],
      [["asset", "upsert", "BTC", "--decimals", "two"], /'--decimals <n>' argument 'two' is invalid/],
      [
        ["asset", "upsert", "BTC", "--published", "yes"],
        /argument 'yes' is invalid\. Allowed choices are true, false/,
      ],
      [["asset", "upsert", "BTC", "--type", "stock"], /Allowed choices are fiat, crypto/],
      [["asset", "upsert", "BTC", "--usd-rate", "abc"], /--usd-rate: /],
      [["pair", "upsert", "BTC-AED", "--tradable", "1"], /Allowed choices are true, false/],
      [["pair", "upsert", "BTC-AED", "--partner", partner], /--partner needs --available/],
      [["pair", "upsert", "BTC-AED", "--available", "false"], /--available needs --partner/],
      [["pair", "upsert", "BTC-AED", "--min-volume", "5", "--max-volume", "1"], /--max-volume: /],
      [["pair", "upsert", "BTC-AED", "--min-volume", "lots"], /--min-volume: /],
      [["pair", "upsert", "BTC-AED", "--lifetime", "0"], /--lifetime: /],
      [["pair", "upsert", "BTC-NOPE"], /pair "BTC-NOPE": Both assets must exist/],
      [["pair", "upsert", "NOPE-AED", "--partner", partner, "--available", "true"], /unknown pair NOPE-AED$/],
      [["pair", "upsert", "BTC-AED", "--partner", unknown, "--available", "true"], /unknown partner/],
      [
        ["price", "set", "BTC-AED", "--reason", "feed outage", "--buy", "1", "--sell", "2"],
        /--sell: Prices need buy >= sell > 0/,
      ],
      [["price", "set", "BTC-AED", "--reason", "feed outage", "--buy", "0", "--sell", "0"], /--buy: /],
      [
        [
          "price",
          "set",
          "BTC-AED",
          "--reason",
          "feed outage",
          "--buy",
          "2",
          "--sell",
          "1",
          "--at",
          "yesterday",
        ],
        /--at: /,
      ],
      [
        [
          "price",
          "set",
          "BTC-AED",
          "--reason",
          "feed outage",
          "--buy",
          "2",
          "--sell",
          "1",
          "--at",
          "9999-12-31T00:00:00Z",
        ],
        /--at: The prices' time should be at most 5 s past the service's clock/,
      ],
      [["price", "set", "BTC-AED", "--buy", "2"], /required option '--sell <y>' not specified/],
      [
        ["price", "set", "BTC-AED", "--buy", "2", "--sell", "1"],
        /required option '--reason <text>' not specified/,
      ],
      [
        ["price", "set", "NOPE-AED", "--reason", "feed outage", "--buy", "2", "--sell", "1"],
        /unknown pair NOPE-AED$/,
      ],
      [["price", "resume", "NOPE-AED"], /unknown pair NOPE-AED$/],
      [["price", "resume", "X".repeat(40)], /unknown pair X{40}$/],
      [["fee", "set", "--partner", partner, "--pair", "BTC-AED", "--vat-percentage", "5"], /per partner/],
      [["fee", "set", "--partner", partner], /nothing to set/],
      [["fee", "set", "--partner", partner, "--pair", "BTC-AED"], /nothing to set/],
      [["fee", "set", "--rate", "0.1"], /required option '--partner <id>' not specified/],
      [["fee", "set", "--partner", partner, "--rate", "1"], /--rate: /],
      [["fee", "set", "--partner", partner, "--vat-percentage", "101"], /--vat-percentage: /],
      [["fee", "set", "--partner", unknown, "--rate", "0.1"], new RegExp(`unknown partner ${unknown}$`)],
      [["fee", "set", "--partner", "nope", "--pair", "BTC-AED", "--rate", "0.1"], /unknown partner nope$/],
      [["fee", "set", "--partner", partner, "--pair", "NOPE-AED", "--rate", "0.1"], /unknown pair NOPE-AED$/],
      [["ledger", "check", "now"], /too many arguments/],
    ];
    const runs = await Promise.all(cases.map(([args]) => runCli(args, env)));
    runs.forEach((r, i) => {
      assertFails(r, 2, cases[i]![1]);
    });

    const failedJson = await cli(
      "price",
      "set",
      "NOPE-AED",
      "--reason",
      "feed outage",
      "--buy",
      "2",
      "--sell",
      "1",
      "--json",
    );
    assertFails(failedJson, 2, /unknown pair/);
    assert.deepEqual(json(failedJson), { error: { exit_code: 2, message: "unknown pair NOPE-AED" } });

    const [btc, newx, fees] = await Promise.all([
      pairSeen("BTC-AED"),
      publicGet("/v1/public/assets/NEWX"),
      partnerFees(),
    ]);
    assert.equal(btc.buy, "350000.00000000");
    assert.equal(btc.tradable, true);
    assert.equal(newx.status, 404);
    assert.deepEqual(fees, { fee_rate: "0.00300000", vat_percentage: null });
  });

  await t.test("other failures exit 1: refused admin token, unreachable service", async () => {
    const port = await closedPort();
    const [wrongToken, down] = await Promise.all([
      cli("ledger", "check", "--admin-token", "not-the-token-at-all"),
      cli("price", "resume", "BTC-AED", "--admin-url", `http://127.0.0.1:${port}`),
    ]);
    assertFails(wrongToken, 1, /refused the admin token \(401 Unauthorized\)/);
    assertFails(down, 1, /cannot reach the admin API at .*ECONNREFUSED/);
  });
});

test("ledger check reports each difference and exits 1", async (t) => {
  const differences = [
    {
      kind: "account_balance",
      account_id: 7,
      account: "client:11111111-2222-4333-8444-555555555555:client-3:BTC",
      asset_id: "BTC",
      recorded: "1.00000000",
      from_postings: "0.50000000",
    },
    { kind: "order_unbalanced", order_id: 42, asset_id: "AED", from_postings: "0.01000000" },
    { kind: "asset_unbalanced", asset_id: "BTC", recorded: "0.50000000" },
  ];
  // A stand-in admin API: a dirty ledger cannot be made through the service's own routes.
  const server = http.createServer((req, res) => {
    const ok = req.url === "/admin/ledger/check" && req.headers.authorization === "Bearer test-token";
    res.writeHead(ok ? 200 : 404, { "Content-Type": "application/json" });
    res.end(JSON.stringify(ok ? { result: { ok: false, differences } } : { code: 404, msg: "Not Found" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const env = { PATH: process.env.PATH ?? "", DATA_DIR: path.join(import.meta.dirname, "no-such-folder") };
  const run = (...extra: string[]): Promise<Run> =>
    runCli(["ledger", "check", "--admin-url", url, "--admin-token", "test-token", ...extra], env);

  const [asText, asJson] = await Promise.all([run(), run("--json")]);
  assertFails(asText, 1, /^counterpart: the ledger check found 3 differences$/);
  assert.deepEqual(asText.stdout.trimEnd().split("\n"), [
    "account client:11111111-2222-4333-8444-555555555555:client-3:BTC: recorded 1.00000000, from postings 0.50000000",
    "order 42 AED: recorded 0, from postings 0.01000000 (an order's postings sum to 0)",
    "asset BTC: account balances sum to 0.50000000, not 0",
  ]);
  assertFails(asJson, 1, /found 3 differences/);
  assert.deepEqual(json(asJson), { ok: false, differences });

  // The same lines in-process, with whatever the service adds later shown rather than dropped.
  assert.equal(
    formatLedgerDifferences([{ kind: "something_new", asset_id: "ETH" }]),
    'something_new: {"kind":"something_new","asset_id":"ETH"}',
  );
});
