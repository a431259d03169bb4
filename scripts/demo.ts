// `npm run demo`: the partner interface end to end, through the SDK, as the sandbox's demo partner.
// Run it while `npm start` runs in another terminal; it reads the service's address and the demo
// partner's id and key from the data folder (DATA_DIR, else ./.data). It onboards a new client
// (unique ids each run, so it can run again and again), uploads a KYC document, deposits AED, buys
// BTC, sells part of it back, withdraws AED, and prints each step, the final balances and the
// client's orders. Prices move with the simulated feed: each trade executes at its quote's price.
// Events (docs/reference.md §6): before the steps it starts a receiver on 127.0.0.1 (a free port)
// and registers it as a webhook endpoint (the sandbox allows loopback), and saves the feed's cursor
// once the client is onboarded; after them it shows each of the client's events arriving at the
// receiver, verified with Webhooks.verify against GET /v1/public/webhook-keys, and the feed read on
// from the saved cursor with events.list(). It removes its endpoint and stops the receiver at the
// end, whatever happened.
// Exit 0 when every step succeeded, 1 otherwise (with one line saying why).

import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import zlib from "node:zlib";
import {
  ApiError,
  AuthenticationError,
  type Balance,
  type ClientCreateRequest,
  Counterpart,
  CounterpartError,
  type Event,
  fromMoney,
  NetworkError,
  type Order,
  type Quote,
  sandboxOptions,
  TimeoutError,
  toMoney,
  Webhooks,
} from "@counterpart/sdk";

const pair = "BTC-AED";
const [base, quoteAsset] = ["BTC", "AED"] as const;
const depositAmount = "50000";
const buyAmount = "0.05";
const sellAmount = "0.02";
const withdrawAmount = "10000";
/** How long the demo waits for its events to reach the receiver and the feed. */
const eventsWaitMs = 30_000;
const hookPath = "/counterpart-demo/webhooks";

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

/** One POST the receiver got: the exact body bytes, the headers, the path. */
interface Delivery {
  raw: Buffer;
  headers: http.IncomingHttpHeaders;
  path: string;
}

/** A local HTTP server that answers 204 to every POST and keeps what it received. */
async function startReceiver() {
  const received: Delivery[] = [];
  let changed: () => void = () => {};
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method === "POST")
        received.push({ raw: Buffer.concat(chunks), headers: req.headers, path: req.url ?? "" });
      res.writeHead(req.method === "POST" ? 204 : 405).end();
      changed();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${hookPath}`,
    received,
    /** Resolves at the next request (or after `ms`). */
    next: (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        changed = () => {
          clearTimeout(timer);
          resolve();
        };
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** The client's events after `after` in the feed, once there are at least `count` of them. */
async function feedAfter(
  counterpart: Counterpart,
  clientId: string,
  after: string | undefined,
  count: number,
) {
  const deadline = Date.now() + eventsWaitMs;
  for (;;) {
    const events: Event[] = [];
    for await (const e of counterpart.events.list({
      partner_client_id: clientId,
      ...(after ? { after } : {}),
    }))
      events.push(e);
    if (events.length >= count) return events;
    if (Date.now() > deadline) {
      throw new DemoFailure(
        `demo: the feed showed ${events.length} of the client's ${count} events within 30 s`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Waits until every one of `events` reached the receiver; checks each delivery's signature against
 * the service's published keys. The verified deliveries, by event id (duplicates, which
 * at-least-once delivery allows, carry the same X-Event-ID and count once).
 */
async function verifiedDeliveries(counterpart: Counterpart, receiver: Receiver, events: readonly Event[]) {
  const keys = await counterpart.webhooks.publicKeys();
  const wanted = new Set(events.map((e) => e.id));
  const verified = new Map<string, { body: Event; keyId: string }>();
  const deadline = Date.now() + eventsWaitMs;
  let seen = 0;
  for (;;) {
    for (; seen < receiver.received.length; seen++) {
      const d = receiver.received[seen]!;
      const check = Webhooks.verify(d.raw, d.headers, keys, { path: d.path });
      if (!check.ok) throw new DemoFailure(`demo: a webhook delivery failed verification (${check.reason})`);
      const body = JSON.parse(d.raw.toString("utf8")) as Event;
      if (body.id !== check.eventId)
        throw new DemoFailure("demo: a delivery's X-Event-ID is not its event's id");
      if (wanted.has(body.id)) verified.set(body.id, { body, keyId: String(d.headers["x-key-id"]) });
    }
    if (verified.size === wanted.size) return verified;
    const left = deadline - Date.now();
    if (left <= 0) {
      throw new DemoFailure(
        `demo: ${verified.size} of the client's ${wanted.size} events reached the webhook receiver within 30 s`,
      );
    }
    await receiver.next(Math.min(left, 500));
  }
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

  const receiver = await startReceiver();
  let endpointId: string | null = null;
  try {
    const endpoint = await counterpart.webhooks.create({ url: receiver.url });
    endpointId = endpoint.id;
    say(`  Webhook endpoint ${endpoint.id} registered: a receiver at ${receiver.url}`);
    say();
    await steps(counterpart, receiver);
  } finally {
    try {
      if (endpointId !== null) {
        await counterpart.webhooks.delete(endpointId);
        say();
        say(`  Webhook endpoint ${endpointId} removed`);
      }
    } finally {
      await receiver.close();
    }
  }
}

async function steps(counterpart: Counterpart, receiver: Receiver): Promise<void> {
  const client = await onboard(counterpart);
  const id = client.partner_client_id;
  say(
    `1. Onboarded client ${id} (${client.name}, ${client.email}, ${client.phone}): ` +
      `${client.status}, ${client.active ? "active" : "inactive"}`,
  );
  // A consumer of the feed stores the id of the last event it processed: here, the onboarding's.
  const [created] = await feedAfter(counterpart, id, undefined, 1);
  const cursor = created!.id;
  say(`   Feed cursor saved: ${cursor} (${created!.type})`);

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

  // Events: the document and the four orders came after the saved cursor.
  const caughtUp = await feedAfter(counterpart, id, cursor, 5);
  const delivered = await verifiedDeliveries(counterpart, receiver, [created!, ...caughtUp]);
  const keyIds = [...new Set([...delivered.values()].map((d) => d.keyId))].join(", ");
  say();
  say(
    `Webhooks: ${delivered.size} events of ${id} delivered to ${receiver.url}, each signature verified (key ${keyIds}):`,
  );
  say(
    table(
      ["EVENT", "TYPE", "RESOURCE"],
      [created!, ...caughtUp].map((e) => {
        const body = delivered.get(e.id)!.body;
        const data = body.data as { order_no?: string; id?: number; partner_client_id?: string };
        const what = body.type.startsWith("order.")
          ? String(data.order_no)
          : body.type.startsWith("document.")
            ? `document #${data.id}`
            : String(data.partner_client_id);
        return [body.id, body.type, what];
      }),
    ),
  );
  say(
    `Feed caught up from the saved cursor ${cursor}: ${caughtUp.length} events ` +
      `(${caughtUp.map((e) => e.type).join(", ")}), the same as delivered`,
  );
  for (const e of caughtUp) {
    if (JSON.stringify(delivered.get(e.id)?.body.data) !== JSON.stringify(e.data)) {
      // Orders' data is the order; a document's links are signed afresh at each read.
      if (!e.type.startsWith("document."))
        throw new DemoFailure(`demo: event ${e.id} differs in the feed and the webhook`);
    }
  }

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
