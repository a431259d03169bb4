// `npm run demo`: the partner interface end to end, through the SDK, as the sandbox's demo partner.
// Run it while `npm start` runs in another terminal; it reads the service's address and the demo
// partner's id and key from the data folder (DATA_DIR, else ./.data). It onboards a new client
// (unique ids each run, so it can run again and again), uploads a KYC document, deposits AED, buys
// BTC, sells part of it back, withdraws AED, and prints each step, the final balances and the
// client's orders. Prices move with the simulated feed: each trade executes at its quote's price.
// Exit 0 when every step succeeded, 1 otherwise (with one line saying why).

import crypto from "node:crypto";
import path from "node:path";
import zlib from "node:zlib";
import {
  ApiError,
  AuthenticationError,
  type Balance,
  type ClientCreateRequest,
  Counterpart,
  CounterpartError,
  fromMoney,
  NetworkError,
  type Order,
  type Quote,
  sandboxOptions,
  TimeoutError,
  toMoney,
} from "@counterpart/sdk";

const pair = "BTC-AED";
const [base, quoteAsset] = ["BTC", "AED"] as const;
const depositAmount = "50000";
const buyAmount = "0.05";
const sellAmount = "0.02";
const withdrawAmount = "10000";

/** A failure that ends the demo with one line on stderr and exit 1. */
class DemoFailure extends Error {}

const dataDir = path.resolve(process.env.DATA_DIR || ".data");
const notRunning =
  `demo: the Counterpart sandbox is not running (nothing answers for the data folder ${dataDir}); ` +
  "run `npm start` first, in another terminal";

function say(line = ""): void {
  process.stdout.write(`${line}\n`);
}

/**
 * An amount in plain notation for reading: the exact value with trailing zeros dropped down to two
 * decimals ("50000.00", "0.05", "0.00012345"). Nothing is rounded.
 */
function show(value: string | null): string {
  if (value === null) return "-";
  const plain = fromMoney(toMoney(value), { notation: "plain" });
  return plain.replace(/(\.\d\d\d*?)0+$/, "$1");
}

function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (r: readonly string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].map((l) => `  ${l}`).join("\n");
}

/** A valid 1x1 PNG (signature, IHDR, IDAT, IEND), generated: the document to upload. */
function tinyPng(): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const typed = Buffer.concat([Buffer.from(type, "latin1"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(typed));
    return Buffer.concat([length, typed, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(1, 0); // width
  header.writeUInt32BE(1, 4); // height
  header[8] = 8; // bit depth
  header[9] = 2; // colour type: RGB
  const pixels = zlib.deflateSync(Buffer.from([0, 0x2a, 0x7a, 0xc8])); // filter byte, one pixel
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", pixels),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** A new client's details, unique per run: its id, e-mail, phone and government ID. */
function newClient(): ClientCreateRequest {
  const run = `${Date.now().toString(36)}${crypto.randomBytes(3).toString("hex")}`;
  const phoneDigits = String(crypto.randomInt(0, 10_000_000)).padStart(7, "0");
  return {
    partner_client_id: `demo-${run}`,
    account_type: "personal",
    name: "Amal Demo",
    birth_date: "1990-05-17",
    email: `amal.${run}@example.com`,
    phone: `+97150${phoneDigits}`,
    residency_id: "ae",
    citizenship_id: "ae",
    place_of_birth_id: "ae",
    government_id_number: `784-DEMO-${run}`,
    government_id_doe: "2031-12-31",
    address: { street: "1 Sheikh Zayed Rd", city: "Dubai", postal_code: "00000", unit: "Apt 12" },
    employment: {
      status: "employed",
      company: "Acme Trading",
      job_industry: "banking_financial_services",
      job_level: "senior",
      job_title: "Analyst",
    },
    trading_volume: "25001_100000",
    account_purpose: ["long_term_investment", "short_term_trading"],
  };
}

/** Onboards a new client; a clash with an earlier run's unique field (2016, 2026-2028) draws new ones. */
async function onboard(counterpart: Counterpart) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await counterpart.clients.create(newClient());
    } catch (err) {
      const clash = err instanceof ApiError && [2016, 2026, 2027, 2028].includes(err.code ?? 0);
      if (!clash || attempt >= 3) throw err;
    }
  }
}

/** A quote, with 4001 (the pair's price is stale) said plainly. */
async function quote(counterpart: Counterpart, clientId: string, side: "buy" | "sell", amount: string) {
  try {
    return await counterpart.quotes.create({
      partner_client_id: clientId,
      asset_pair: pair,
      side,
      base_amount: amount,
    });
  } catch (err) {
    if (err instanceof ApiError && err.code === 4001) {
      throw new DemoFailure(
        `demo: the ${side} quote failed with 4001 (${err.msg ?? "Trading is temporarily unavailable"}): ` +
          `the ${pair} price is stale, the price feed has not moved it recently; start the sandbox with ` +
          "the simulated feed (PRICE_FEED=simulated, the default) or set a price with `counterpart price set`",
      );
    }
    throw err;
  }
}

/** Executes a quote; the order must be completed, at the quoted price. */
async function execute(counterpart: Counterpart, clientId: string, q: Quote, ref: string): Promise<Order> {
  if (q.token === null) throw new DemoFailure("demo: the quote came without a token");
  let order: Order;
  try {
    ({ order } = await counterpart.quotes.execute({
      partner_client_id: clientId,
      token: q.token,
      partner_order_ref: ref,
    }));
  } catch (err) {
    if (err instanceof ApiError && err.code === 4008) {
      throw new DemoFailure(
        `demo: the quote expired before it was executed (4008, lifetime ${q.lifetime} s); run the demo again`,
      );
    }
    throw err;
  }
  if (order.status !== "completed") {
    throw new DemoFailure(
      `demo: the ${order.type} order ${order.order_no} ended ${order.status}, not completed`,
    );
  }
  return order;
}

function priceNote(order: Order, q: Quote): string {
  return order.price !== null && toMoney(order.price) === toMoney(q.market_price)
    ? "at the quoted price"
    : `quoted at ${show(q.market_price)}`;
}

async function available(counterpart: Counterpart, clientId: string, asset: string): Promise<string> {
  const b = await counterpart.balances.get(clientId, asset);
  return `${show(b.available_balance)} ${asset}`;
}

async function demo(): Promise<void> {
  let options: ReturnType<typeof sandboxOptions>;
  try {
    options = sandboxOptions(dataDir);
  } catch {
    throw new DemoFailure(notRunning);
  }
  const counterpart = new Counterpart({ ...options, appInfo: "counterpart-demo" });

  // A first signed call, not retried: it tells a sandbox that is down from one that is up.
  let btc: Awaited<ReturnType<Counterpart["assetPairs"]["get"]>>;
  try {
    btc = await counterpart.assetPairs.get(pair, { maxRetries: 0, timeoutMs: 10_000 });
  } catch (err) {
    if ((err instanceof NetworkError && !err.maybeSent) || err instanceof TimeoutError) {
      throw new DemoFailure(notRunning);
    }
    if (err instanceof AuthenticationError) {
      throw new DemoFailure(
        `demo: the service at ${options.baseUrl} refused the demo partner of ${dataDir} (401); ` +
          "is DATA_DIR the data folder of the running sandbox?",
      );
    }
    throw err;
  }
  say(`Counterpart demo: partner ${options.partnerId} at ${options.baseUrl}`);
  say(`  ${pair} now: buy ${show(btc.buy)}, sell ${show(btc.sell)} ${quoteAsset}`);
  say();

  const client = await onboard(counterpart);
  const id = client.partner_client_id;
  say(
    `1. Onboarded client ${id} (${client.name}, ${client.email}, ${client.phone}): ` +
      `${client.status}, ${client.active ? "active" : "inactive"}`,
  );

  const png = tinyPng();
  const document = await counterpart.documents.upload(id, {
    type: "government_id",
    front: { data: png, filename: "government-id.png", contentType: "image/png" },
  });
  say(`2. Uploaded ${document.type} document #${document.id} (government-id.png, ${png.length} bytes)`);

  const { order: deposit } = await counterpart.deposits.create({
    partner_client_id: id,
    asset_id: quoteAsset,
    amount: depositAmount,
    partner_order_ref: `${id}-deposit`,
  });
  say(
    `3. Deposited ${show(deposit.debit)} ${quoteAsset}: order ${deposit.order_no} ${deposit.status}; ` +
      `available ${await available(counterpart, id, quoteAsset)}`,
  );

  const buyQuote = await quote(counterpart, id, "buy", buyAmount);
  say(
    `4. Quoted a buy of ${show(buyQuote.base_amount)} ${base} at ${show(buyQuote.market_price)} ${quoteAsset}: ` +
      `${show(buyQuote.quote_amount)} ${quoteAsset} + fee ${show(buyQuote.fee_amount)} ${quoteAsset}, ` +
      `valid ${buyQuote.lifetime} s`,
  );
  const buy = await execute(counterpart, id, buyQuote, `${id}-buy`);
  say(
    `5. Bought ${show(buy.debit)} ${buy.debit_asset_id} for ${show(buy.credit)} ${buy.credit_asset_id} ` +
      `plus fee ${show(buy.fee)} ${buy.fee_asset_id} at ${show(buy.price)}, ${priceNote(buy, buyQuote)}: ` +
      `order ${buy.order_no} ${buy.status}`,
  );

  const sellQuote = await quote(counterpart, id, "sell", sellAmount);
  say(
    `6. Quoted a sell of ${show(sellQuote.base_amount)} ${base} at ${show(sellQuote.market_price)} ${quoteAsset}: ` +
      `${show(sellQuote.quote_amount)} ${quoteAsset} less fee ${show(sellQuote.fee_amount)} ${quoteAsset}, ` +
      `valid ${sellQuote.lifetime} s`,
  );
  const sell = await execute(counterpart, id, sellQuote, `${id}-sell`);
  say(
    `7. Sold ${show(sell.credit)} ${sell.credit_asset_id} for ${show(sell.debit)} ${sell.debit_asset_id} ` +
      `less fee ${show(sell.fee)} ${sell.fee_asset_id} at ${show(sell.price)}, ${priceNote(sell, sellQuote)}: ` +
      `order ${sell.order_no} ${sell.status}`,
  );

  const { order: withdrawal } = await counterpart.withdrawals.create({
    partner_client_id: id,
    asset_id: quoteAsset,
    amount: withdrawAmount,
    partner_order_ref: `${id}-withdrawal`,
  });
  say(
    `8. Withdrew ${show(withdrawal.credit)} ${quoteAsset}: order ${withdrawal.order_no} ${withdrawal.status}; ` +
      `available ${await available(counterpart, id, quoteAsset)}`,
  );

  const balances = (await counterpart.balances.list(id)).filter((b: Balance) => toMoney(b.balance) !== 0n);
  const totalUsd = balances.reduce((sum, b) => sum + toMoney(b.balance_usd), 0n);
  say();
  say(`Final balances of ${id}:`);
  say(
    table(
      ["ASSET", "BALANCE", "AVAILABLE", "USD"],
      balances.map((b) => [b.asset_id, show(b.balance), show(b.available_balance), show(b.balance_usd)]),
    ),
  );
  say(`  Total: ${show(fromMoney(totalUsd))} USD`);

  const orders: Order[] = [];
  for await (const o of counterpart.orders.listAll({ partner_client_id: id })) orders.push(o);
  orders.reverse(); // oldest first: the order of the steps
  say();
  say(`Orders of ${id}:`);
  say(
    table(
      ["ORDER_NO", "TYPE", "STATUS", "DEBIT", "CREDIT", "PRICE", "FEE", "REF"],
      orders.map((o) => [
        o.order_no,
        o.type,
        o.status,
        o.debit === null ? "-" : `${show(o.debit)} ${o.debit_asset_id}`,
        o.credit === null ? "-" : `${show(o.credit)} ${o.credit_asset_id}`,
        show(o.price),
        `${show(o.fee)} ${o.fee_asset_id}`,
        o.partner_order_ref ?? "-",
      ]),
    ),
  );
}

async function main(): Promise<number> {
  try {
    await demo();
    return 0;
  } catch (err) {
    let line: string;
    if (err instanceof DemoFailure) line = err.message;
    else if (err instanceof NetworkError && !err.maybeSent) line = notRunning;
    else if (err instanceof CounterpartError) line = `demo: ${err.message}`;
    else line = `demo: unexpected failure: ${err instanceof Error ? err.message : String(err)}`;
    process.stderr.write(`${line.replace(/\s*\n\s*/g, " ")}\n`);
    return 1;
  }
}

process.exitCode = await main();
