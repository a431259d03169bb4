// End to end: the real service in its own process (`counterpart serve`, the sandbox: PGlite in a
// temporary data folder, or a fresh PostgreSQL database when TEST_DATABASE_URL is set), driven
// only through the SDK as the sandbox's demo partner. Every request crosses a socket, is signed by
// the SDK and verified by the service. Each test makes the clients, funds and orders it checks
// (its own partner_client_id and references), so any one runs alone and in any order.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { clientPayload, sampleFile } from "../../server/src/testing/fixtures.ts";
import { type ServiceProcess, startService, tempDataDir } from "../../server/src/testing/processes.ts";
import {
  ApiError,
  AuthenticationError,
  type ClientCreateRequest,
  ConflictError,
  Counterpart,
  type CounterpartOptions,
  type FetchPort,
  generateTestKeyPair,
  NotFoundError,
  type Order,
  sandboxOptions,
  toMoney,
  ValidationError,
} from "./index.ts";

const testDatabaseUrl = process.env.TEST_DATABASE_URL || null;

// Whole files: the service refuses a file that only starts like one.
const png = sampleFile("png", 256);
const pdf = sampleFile("pdf", 512);

const newClient = clientPayload(1, {
  partner_client_id: "sdk-client-1",
  name: "Amal Sdk",
  email: "amal.sdk@example.com",
  account_purpose: ["long_term_investment", "short_term_trading"],
}) as unknown as ClientCreateRequest;

describe("the SDK against a running sandbox", () => {
  const dataDir = tempDataDir();
  let svc: ServiceProcess | undefined;
  let counterpart: Counterpart;
  let partner: Pick<CounterpartOptions, "baseUrl" | "partnerId" | "privateKey">;
  /** When set, the next POST reaches the service but its response is "lost" on the way back. */
  let loseNextPostResponse = false;
  let dropDatabase: (() => Promise<void>) | null = null;

  const adminToken = "sdk-e2e-admin-token-0123456789";
  const admin = async (method: "POST" | "PUT", target: string, body: unknown): Promise<unknown> => {
    const res = await fetch(`${svc!.adminUrl}${target}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    assert.ok(res.status === 200 || res.status === 201, text);
    return JSON.parse(text);
  };

  /** A new partner registered through the admin API, as an operator would. */
  const registerPartner = async (name: string) => {
    const keys = generateTestKeyPair();
    const created = (await admin("POST", "/admin/partners", {
      name,
      public_key_pem: keys.publicKeyPem,
      allowed_ips: ["127.0.0.1/32", "::1/128"],
    })) as { result: { id: string } };
    return { baseUrl: svc!.partnerUrl, partnerId: created.result.id, privateKey: keys.privateKeyPem };
  };
  /**
   * The sandbox's demo partner on PGlite. On PostgreSQL the service runs as in production and makes
   * no demo partner, so one is registered.
   */
  const partnerOptions = async () => {
    if (fs.existsSync(path.join(dataDir, "demo-partner", "partner.json"))) return sandboxOptions(dataDir);
    return registerPartner("SDK e2e");
  };
  const available = async (pcid: string, assetId: string) =>
    toMoney((await counterpart.balances.get(pcid, assetId)).available_balance);

  /** A verified client of the test's own, number `n` (fields unique to it). */
  let clientsMade = 1;
  const newClientOf = async (tag: string): Promise<string> => {
    const n = ++clientsMade;
    const payload = clientPayload(n, { partner_client_id: `sdk-${tag}-${n}` });
    return (await counterpart.clients.create(payload as unknown as ClientCreateRequest)).partner_client_id;
  };
  const deposit = (pcid: string, amount: string, ref: string) =>
    counterpart.deposits.create({ partner_client_id: pcid, asset_id: "AED", amount, partner_order_ref: ref });
  /** The manual feed does not tick: a fresh price, so that BTC-AED is not stale. */
  const freshPrice = () =>
    admin("PUT", "/admin/pairs/BTC-AED/price", { buy: "350000", sell: "349000", reason: "test set-up" });

  before(async () => {
    const env: Record<string, string> = { DATA_DIR: dataDir, ADMIN_TOKEN: adminToken };
    if (testDatabaseUrl !== null) {
      // A database of its own, as main.test.ts does: the process migrates and seeds it.
      const { default: pg } = await import("pg");
      const dbName = `cp_sdk_${process.pid}_${Date.now()}`;
      const admin = new pg.Client({ connectionString: testDatabaseUrl });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${dbName}`);
      dropDatabase = async () => {
        await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
        await admin.end();
      };
      const url = new URL(testDatabaseUrl);
      url.pathname = `/${dbName}`;
      env.DATABASE_URL = url.toString();
    }
    svc = await startService(env);
    const losingFetch: FetchPort = async (url, init) => {
      const response = await fetch(url, init);
      if (loseNextPostResponse && init.method === "POST") {
        loseNextPostResponse = false;
        await response.text();
        throw new TypeError("fetch failed", {
          cause: Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }),
        });
      }
      return response;
    };
    partner = await partnerOptions();
    counterpart = new Counterpart({ ...partner, fetch: losingFetch, retryBaseDelayMs: 20 });
  });

  after(async () => {
    try {
      if (svc !== undefined && svc.child.exitCode === null) await svc.stop();
    } finally {
      await dropDatabase?.();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test("public catalog: assets and countries, unsigned", async () => {
    const assets = await counterpart.assets.list();
    const aed = assets.find((a) => a.id === "AED");
    assert.deepEqual(aed, {
      id: "AED",
      type: "fiat",
      name_en: aed?.name_en,
      decimal_places: 2,
      published: true,
      depositable: true,
      withdrawable: true,
    });
    assert.equal((await counterpart.assets.get("BTC")).type, "crypto");
    await assert.rejects(counterpart.assets.get("NOPE"), NotFoundError);
    const countries = await counterpart.countries.list();
    assert.ok(countries.some((c) => c.id === "ae"));
    assert.equal((await counterpart.countries.get("ae")).id, "ae");
    await assert.rejects(counterpart.countries.get("zz"), NotFoundError);
  });

  test("asset pairs, signed", async () => {
    const pairs = await counterpart.assetPairs.list();
    assert.equal(pairs.length, 8);
    const btc = await counterpart.assetPairs.get("BTC-AED");
    assert.equal(btc.base_id, "BTC");
    assert.equal(btc.quote_id, "AED");
    assert.ok(toMoney(btc.buy) >= toMoney(btc.sell));
    await assert.rejects(counterpart.assetPairs.get("NOPE-AED"), NotFoundError);
  });

  test("a wrong key is an AuthenticationError that says what to check", async () => {
    const other = generateTestKeyPair();
    const wrong = new Counterpart({ ...partner, privateKey: other.privateKeyPem });
    await assert.rejects(wrong.assetPairs.list(), (err: unknown) => {
      assert.ok(err instanceof AuthenticationError);
      assert.equal(err.status, 401);
      assert.match(err.message, /private key matches the public key/);
      return true;
    });
  });

  test("clients: create, get, update, deactivate and reactivate, list", async () => {
    // A partner of its own: the listings below hold exactly the one client this test creates.
    const counterpart = new Counterpart({
      ...(await registerPartner("SDK e2e clients")),
      retryBaseDelayMs: 20,
    });
    const pcid = newClient.partner_client_id;
    const created = await counterpart.clients.create(newClient);
    assert.equal(created.partner_client_id, pcid);
    assert.equal(created.status, "verified");
    assert.equal(created.active, true);
    assert.deepEqual(await counterpart.clients.get(pcid), created);

    const {
      partner_client_id: _p,
      account_type: _a,
      birth_date: _b,
      place_of_birth_id: _o,
      ...fields
    } = newClient;
    const updated = await counterpart.clients.update(pcid, { ...fields, name: "Amal Sdk Updated" });
    assert.equal(updated.name, "Amal Sdk Updated");
    assert.equal(updated.birth_date, newClient.birth_date);

    await assert.rejects(counterpart.clients.create(newClient), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.errorName, "duplicate_partner_client_id");
      return true;
    });
    await assert.rejects(
      counterpart.clients.create({ ...newClient, partner_client_id: "x", email: "not-an-email" }),
      (err: unknown) =>
        err instanceof ValidationError && err.fieldErrors.some((e) => e.loc.join(".") === "body.email"),
    );

    await counterpart.clients.setActive(pcid, false);
    assert.equal((await counterpart.clients.get(pcid)).active, false);
    await assert.rejects(
      counterpart.deposits.create({
        partner_client_id: pcid,
        asset_id: "AED",
        amount: "1",
        partner_order_ref: "blocked",
      }),
      (err: unknown) => err instanceof ApiError && err.errorName === "client_deactivated",
    );
    await counterpart.clients.setActive(pcid, true);

    const page = await counterpart.clients.list({ status: ["verified"], page_size: 10 });
    assert.equal(page.total, 1);
    assert.equal(page.items[0]?.partner_client_id, pcid);
    const all = [];
    for await (const c of counterpart.clients.listAll({ from_datetime: new Date(Date.now() - 3_600_000) }))
      all.push(c);
    assert.deepEqual(
      all.map((c) => c.partner_client_id),
      [pcid],
    );
  });

  test("balances: every asset, zero in the wire's exponent form", async () => {
    const pcid = await newClientOf("balances");
    const balances = await counterpart.balances.list(pcid);
    assert.ok(balances.length >= 8);
    const aed = balances.find((b) => b.asset_id === "AED");
    assert.equal(aed?.available_balance, "0E-8");
    assert.equal(toMoney(aed.available_balance), 0n);
    await assert.rejects(
      counterpart.balances.list("nobody"),
      (err: unknown) => err instanceof ApiError && err.code === 2008,
    );
    await assert.rejects(
      counterpart.balances.get(pcid, "NOPE"),
      (err: unknown) => err instanceof ApiError && err.code === 2012,
    );
  });

  test("deposits: completed; the same request again is recovered from 2020 as the same order", async () => {
    const pcid = await newClientOf("deposits");
    const request = {
      partner_client_id: pcid,
      asset_id: "AED",
      amount: "1000.5",
      partner_order_ref: "sdk-dep-1",
    };
    const first = await counterpart.deposits.create(request);
    assert.equal(first.replayed, false);
    assert.equal(first.order.status, "completed");
    assert.equal(first.order.type, "deposit");
    assert.equal(toMoney(first.order.debit ?? ""), toMoney("1000.5"));
    assert.equal(await available(pcid, "AED"), toMoney("1000.5"));

    const again = await counterpart.deposits.create(request);
    assert.equal(again.replayed, true);
    assert.deepEqual(again.order, first.order);
    assert.equal(await available(pcid, "AED"), toMoney("1000.5"), "money moved once");

    await assert.rejects(
      counterpart.deposits.create({ ...request, amount: "5" }),
      (err: unknown) => err instanceof ConflictError && err.existingOrder?.id === first.order.id,
    );
  });

  test("a deposit whose response is lost is retried, meets 2020, and returns the original order", async () => {
    const pcid = await newClientOf("lost");
    loseNextPostResponse = true;
    const result = await counterpart.deposits.create({
      partner_client_id: pcid,
      asset_id: "AED",
      amount: "500",
      partner_order_ref: "sdk-dep-2",
    });
    assert.equal(loseNextPostResponse, false, "the first response was dropped");
    assert.equal(result.replayed, true);
    assert.equal(result.order.status, "completed");
    assert.equal(result.order.partner_order_ref, "sdk-dep-2");
    assert.equal(await available(pcid, "AED"), toMoney("500"), "deposited once");
  });

  test("withdrawals: completed, and 3005 when the balance is short", async () => {
    const pcid = await newClientOf("withdrawals");
    await deposit(pcid, "1500.5", "sdk-wd-funding");
    const { order, replayed } = await counterpart.withdrawals.create({
      partner_client_id: pcid,
      asset_id: "AED",
      amount: "200.25",
      partner_order_ref: "sdk-wd-1",
    });
    assert.equal(replayed, false);
    assert.equal(order.type, "withdrawal");
    assert.equal(order.debit, null);
    assert.equal(toMoney(order.credit ?? ""), toMoney("200.25"));
    assert.equal(await available(pcid, "AED"), toMoney("1300.25"));
    await assert.rejects(
      counterpart.withdrawals.create({
        partner_client_id: pcid,
        asset_id: "AED",
        amount: "99999",
        partner_order_ref: "sdk-wd-2",
      }),
      (err: unknown) => err instanceof ApiError && err.errorName === "insufficient_funds_for_payment",
    );
    await assert.rejects(
      counterpart.withdrawals.create({
        partner_client_id: pcid,
        asset_id: "AED",
        amount: "-1",
        partner_order_ref: "sdk-wd-3",
      }),
      (err: unknown) => err instanceof ValidationError && err.fieldErrors[0]?.loc.join(".") === "body.amount",
    );
  });

  test("quotes and execution, with and without a reference; a repeated execution is recovered", async () => {
    const pcid = await newClientOf("trading");
    await deposit(pcid, "1300.25", "sdk-trading-funding");
    await freshPrice();
    const quote = await counterpart.quotes.create({
      partner_client_id: pcid,
      asset_pair: "BTC-AED",
      side: "buy",
      base_amount: "0.001",
    });
    assert.equal(toMoney(quote.market_price), toMoney("350000"));
    assert.equal(toMoney(quote.base_amount), toMoney("0.001"));
    assert.ok(quote.token?.startsWith("qt_"));
    const execute = { partner_client_id: pcid, token: quote.token ?? "", partner_order_ref: "sdk-buy-1" };
    const bought = await counterpart.quotes.execute(execute);
    assert.equal(bought.replayed, false);
    assert.equal(bought.order.type, "buy");
    assert.equal(bought.order.status, "completed");
    assert.equal(await available(pcid, "BTC"), toMoney("0.001"));

    const repeated = await counterpart.quotes.execute(execute);
    assert.deepEqual(repeated, { order: bought.order, replayed: true });

    await assert.rejects(
      counterpart.quotes.create({
        partner_client_id: pcid,
        asset_pair: "BTC-AED",
        side: "buy",
        base_amount: "11",
      }),
      (err: unknown) =>
        err instanceof ApiError &&
        err.errorName === "amount_above_maximum" &&
        err.limit !== null &&
        err.quote !== null,
    );

    const sellQuote = await counterpart.quotes.create({
      partner_client_id: pcid,
      asset_pair: "BTC-AED",
      side: "sell",
      base_amount: "0.0005",
    });
    const sold = await counterpart.quotes.execute({ partner_client_id: pcid, token: sellQuote.token ?? "" });
    assert.equal(sold.order.type, "sell");
    assert.equal(sold.order.partner_order_ref, null);
    assert.equal(await available(pcid, "BTC"), toMoney("0.0005"));
    await assert.rejects(
      counterpart.quotes.execute({ partner_client_id: pcid, token: sellQuote.token ?? "" }),
      (err: unknown) => err instanceof ApiError && err.errorName === "invalid_trading_token",
    );
  });

  test("orders: by id, by reference, a filtered page, and every page through listAll", async () => {
    // The client's history, oldest first: two deposits, a withdrawal, a buy and a sell.
    const pcid = await newClientOf("orders");
    await deposit(pcid, "1000.5", "sdk-orders-dep-1");
    await deposit(pcid, "500", "sdk-orders-dep-2");
    await counterpart.withdrawals.create({
      partner_client_id: pcid,
      asset_id: "AED",
      amount: "200.25",
      partner_order_ref: "sdk-orders-wd-1",
    });
    await freshPrice();
    for (const [side, amount] of [
      ["buy", "0.001"],
      ["sell", "0.0005"],
    ] as const) {
      const quote = await counterpart.quotes.create({
        partner_client_id: pcid,
        asset_pair: "BTC-AED",
        side,
        base_amount: amount,
      });
      await counterpart.quotes.execute({ partner_client_id: pcid, token: quote.token ?? "" });
    }

    const byRef = await counterpart.orders.getByRef("sdk-orders-dep-1");
    assert.equal(byRef.type, "deposit");
    assert.deepEqual(await counterpart.orders.get(byRef.id), byRef);
    await assert.rejects(counterpart.orders.getByRef("no-such-ref"), NotFoundError);
    await assert.rejects(counterpart.orders.get(999_999), NotFoundError);

    const deposits = await counterpart.orders.list({
      partner_client_id: pcid,
      status: ["completed"],
      source: ["bank"],
    });
    assert.equal(deposits.total, 3, "two deposits and a withdrawal");
    assert.equal(deposits.page, 1);

    const all: Order[] = [];
    for await (const order of counterpart.orders.listAll({ partner_client_id: pcid, page_size: 2 }))
      all.push(order);
    assert.equal(all.length, 5, "2 deposits, 1 withdrawal, 1 buy, 1 sell, over 3 pages");
    assert.deepEqual(
      all.map((o) => o.type),
      ["sell", "buy", "withdrawal", "deposit", "deposit"],
    );
    assert.equal(new Set(all.map((o) => o.id)).size, 5);
    await assert.rejects(
      counterpart.orders.list({ partner_client_id: "nobody" }),
      (err: unknown) => err instanceof ApiError && err.code === 2008,
    );
  });

  test("documents: upload (multipart, signed over its bytes), get, list, listAll, and the file link works", async () => {
    const pcid = await newClientOf("documents");
    const uploaded = await counterpart.documents.upload(pcid, {
      type: "government_id",
      front: { data: png, filename: "front.png", contentType: "image/png" },
      back: { data: pdf, filename: "back.pdf", contentType: "application/pdf" },
    });
    assert.equal(uploaded.type, "government_id");
    assert.ok(uploaded.back_file !== null);
    const fetched = await counterpart.documents.get(pcid, uploaded.id);
    assert.equal(fetched.id, uploaded.id);
    const file = await fetch(fetched.front_file);
    assert.equal(file.status, 200);
    assert.deepEqual(Buffer.from(await file.arrayBuffer()), png);

    await counterpart.documents.upload(pcid, { type: "proof_of_address", front: { data: pdf } });
    const page = await counterpart.documents.list(pcid, { type: ["government_id"] });
    assert.equal(page.total, 1);
    const ids: number[] = [];
    for await (const d of counterpart.documents.listAll(pcid, { page_size: 1 })) ids.push(d.id);
    assert.equal(ids.length, 2);

    await assert.rejects(
      counterpart.documents.upload(pcid, {
        type: "government_id",
        front: { data: Buffer.from("plain text") },
      }),
      (err: unknown) =>
        err instanceof ValidationError && err.fieldErrors.some((e) => e.loc.join(".") === "body.front_file"),
    );
    await assert.rejects(counterpart.documents.get(pcid, 999_999), NotFoundError);
    await assert.rejects(
      counterpart.documents.list("nobody"),
      (err: unknown) => err instanceof ApiError && err.code === 2008,
    );
  });
});
