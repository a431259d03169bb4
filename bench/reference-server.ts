// The reference the hot paths are compared with: a minimal partner API doing the same logical work
// as each path of the service, written the plain way, with nothing the service adds on top (no
// replay guard, no re-read of the partner's row, no client or asset status checks, no ledger of
// postings, no OpenAPI schemas). Plain Fastify with its pino logger at the service's level, `pg`
// with the service's pool size per process (every statement in pg's callback form, as the service
// sends its own since 7 December), and the partner's Ed25519 public key parsed once. The
// signature is checked with packages/protocol's own canonical string and verification, so the
// crypto is the service's.
//
// Reads use the service's tables on the same database (the same rows and indexes the service
// reads); writes use the reference's own minimal tables (bench/reference-db.ts) in that database.
//
//   GET  /v1/partner/balances?partner_client_id=   one SELECT: the catalog's assets, the client's
//                                                  accounts and the USD prices
//   GET  /v1/partner/asset-pairs                   one SELECT
//   GET  /v1/partner/orders/:id                    one point SELECT (order and client id)
//   GET  /v1/partner/orders?page_size=             one SELECT: the page and the total
//   POST /v1/partner/deposits, /withdrawals        BEGIN; INSERT the order (unique reference);
//                                                  UPDATE the balance, guarded; COMMIT
//   POST /v1/partner/quotes                        SELECT the pair's price; INSERT the quote (token hash)
//   POST /v1/partner/quotes/execute                BEGIN; UPDATE the quote spent (locks it); INSERT
//                                                  the order; UPDATE two balances, guarded; COMMIT
//   GET  /bare/balances, /bare/asset-pairs,        each read's bare twin: no SQL, the signature
//        /bare/orders/:id, /bare/orders            checked, then the read's answer for the same
//                                                  target kept from its first call and sent again
//                                                  (the issue's "bare Fastify route with the same
//                                                  body"); the bound the issue sets on a read's
//                                                  server CPU is 1.3 times its twin's
//
// The signature is verified by node:crypto, as the reference does; with "verifier":
// "libsodium" in its configuration (BENCH_REFERENCE_VERIFIER), by libsodium through sodium-native,
// the library the service verifies with by default, to tell the library's share of a ratio apart.
//
// Usage: node bench/reference-server.ts <config.json>, the file holding { databaseUrl, partnerId,
// publicKeyPem, workers, poolSize, logLevel, verifier }. Forks `workers` processes sharing one loopback port
// and prints {"port":N} on stdout once all listen.

import cluster from "node:cluster";
import crypto from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import {
  canonicalPath,
  canonicalString,
  checkTimestamp,
  decodeSignature,
  formatDecimal,
  mul,
  parseDecimal,
  parsePublicKey,
  verifySignature,
} from "@counterpart/protocol";
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify";
import pg from "pg";

interface Config {
  databaseUrl: string;
  partnerId: string;
  publicKeyPem: string;
  workers: number;
  poolSize: number;
  logLevel: string;
  verifier?: "node" | "libsodium";
}

const configFile = process.argv[2];
if (configFile === undefined) {
  process.stderr.write("usage: node bench/reference-server.ts <config.json>\n");
  process.exit(2);
}
const config = JSON.parse(fs.readFileSync(configFile, "utf8")) as Config;

if (cluster.isPrimary) {
  let stopping = false;
  let listening = 0;
  cluster.on("listening", (_worker, address) => {
    listening++;
    if (listening === config.workers) process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);
  });
  cluster.on("exit", (worker, code, signal) => {
    if (!stopping)
      process.stderr.write(`reference worker ${worker.process.pid} exited (${code ?? signal})\n`);
  });
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.on(signal, () => {
      stopping = true;
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill("SIGTERM");
      setTimeout(() => process.exit(0), 2_000).unref();
      cluster.on("exit", () => {
        if (Object.values(cluster.workers ?? {}).every((w) => w === undefined || w.isDead())) process.exit(0);
      });
    });
  }
  for (let i = 0; i < config.workers; i++) cluster.fork();
} else {
  await serve();
}

// ---------------------------------------------------------------------------------------------

class Refusal extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** The partner's signature check, by node:crypto (packages/protocol's) or by libsodium. */
function signatureCheck(key: crypto.KeyObject, library: "node" | "libsodium") {
  if (library === "node") return (canonical: string, sig: Buffer) => verifySignature(key, canonical, sig);
  const sodium = createRequire(import.meta.url)("sodium-native") as {
    crypto_sign_verify_detached(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean;
  };
  // RFC 8410's SubjectPublicKeyInfo: 12 bytes of prefix, then the key's 32.
  const raw = key.export({ type: "spki", format: "der" }).subarray(12);
  return (canonical: string, sig: Buffer) =>
    sodium.crypto_sign_verify_detached(sig, Buffer.from(canonical, "utf8"), raw);
}

async function serve(): Promise<void> {
  const pool = new pg.Pool({ connectionString: config.databaseUrl, max: config.poolSize });
  const parsed = parsePublicKey(config.publicKeyPem);
  if (!parsed.ok) throw new Error(`the partner's public key: ${parsed.reason}`);
  const verify = signatureCheck(parsed.key, config.verifier ?? "node");
  const partnerId = config.partnerId.toLowerCase();
  const rawBodies = new WeakMap<FastifyRequest, Buffer>();

  const app = Fastify({ logger: { level: config.logLevel } });
  // The signature covers the body's bytes as sent: keep them next to the parsed JSON.
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    rawBodies.set(request, body as Buffer);
    try {
      done(null, JSON.parse((body as Buffer).toString("utf8")));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  app.setErrorHandler((err, _request, reply) => {
    if (err instanceof Refusal) return reply.code(err.status).send({ error: err.message });
    reply.log.error({ err }, "reference: request failed");
    return reply.code(500).send({ error: "internal" });
  });

  app.addHook("preHandler", async (request: FastifyRequest) => {
    const h = request.headers;
    const id = h["x-partner-id"];
    const timestamp = h["x-timestamp"];
    const signature = h["x-signature"];
    if (typeof id !== "string" || typeof timestamp !== "string" || typeof signature !== "string")
      throw new Refusal(401, "missing header");
    if (id.toLowerCase() !== partnerId) throw new Refusal(401, "unknown partner");
    if (!checkTimestamp(timestamp, Date.now())) throw new Refusal(401, "stale timestamp");
    const sig = decodeSignature(signature);
    const path = canonicalPath(request.url);
    if (sig === null || path === null) throw new Refusal(401, "malformed");
    const canonical = canonicalString({
      timestamp,
      method: request.method,
      path,
      body: rawBodies.get(request) ?? "",
    });
    if (!verify(canonical, sig)) throw new Refusal(401, "signature mismatch");
  });

  // -------------------------------------------------------------------------------------------
  // Reads, on the service's tables

  /**
   * A read's bare twin: the same answer for the same target, made once by the read and kept, then
   * sent again behind the same verification, with no SQL.
   */
  function bareTwin<R extends FastifyRequest>(read: (request: R) => Promise<unknown>) {
    const kept = new Map<string, unknown>();
    return async (request: R) => {
      let answer = kept.get(request.url);
      if (answer === undefined) {
        answer = await read(request);
        kept.set(request.url, answer);
      }
      return answer;
    };
  }

  const balances = async (request: FastifyRequest<{ Querystring: { partner_client_id?: string } }>) => {
    const pcid = request.query.partner_client_id;
    if (typeof pcid !== "string" || pcid === "") throw new Refusal(400, "partner_client_id");
    const { rows } = await pool.query<{
      id: string;
      balance: string;
      available: string;
      rate: string | null;
    }>(
      `SELECT a.id, coalesce(ac.balance, 0)::text AS balance, coalesce(ac.balance - ac.held, 0)::text AS available,
              coalesce(p.sell, a.usd_rate)::text AS rate
         FROM clients c
        CROSS JOIN assets a
         LEFT JOIN accounts ac ON ac.kind = 'client' AND ac.partner_id = c.partner_id AND ac.client_id = c.id
                              AND ac.asset_id = a.id
         LEFT JOIN asset_pairs p ON p.base_id = a.id AND p.quote_id = 'USD'
        WHERE c.partner_id = $1 AND c.partner_client_id = $2
        ORDER BY a.type DESC, a.id`,
      [partnerId, pcid],
    );
    if (rows.length === 0) throw new Refusal(400, "invalid client");
    return {
      items: rows.map((r) => {
        const balance = money(r.balance);
        const available = money(r.available);
        const rate = r.rate === null ? 0n : money(r.rate);
        return {
          asset_id: r.id,
          balance: formatDecimal(balance),
          available_balance: formatDecimal(available),
          balance_usd: formatDecimal(mul(balance, rate, "down")),
          available_balance_usd: formatDecimal(mul(available, rate, "down")),
        };
      }),
    };
  };
  app.get("/v1/partner/balances", balances);
  app.get("/bare/balances", bareTwin(balances));

  async function assetPairs() {
    const { rows } = await pool.query<PairRow>(
      `SELECT p.id, p.base_id, p.quote_id, p.buy::text, p.sell::text, p.tradable
         FROM asset_pairs p
         LEFT JOIN partner_pairs pp ON pp.pair_id = p.id AND pp.partner_id = $1
        WHERE pp.available IS NULL OR pp.available
        ORDER BY p.id`,
      [partnerId],
    );
    return { items: rows.map(pairView) };
  }
  app.get("/v1/partner/asset-pairs", assetPairs);
  app.get("/bare/asset-pairs", bareTwin(assetPairs));

  const orderColumns = `o.id, o.partner_order_ref, c.partner_client_id, o.type, o.source, o.status,
    o.price::text, o.credit::text, o.credit_asset_id, o.debit::text, o.debit_asset_id, o.fee::text,
    o.fee_asset_id, o.vat::text, o.created_at, o.transitioned_at, o.updated_at`;

  const oneOrder = async (request: FastifyRequest<{ Params: { id: string } }>) => {
    if (!/^[1-9][0-9]{0,15}$/.test(request.params.id)) throw new Refusal(404, "not found");
    const { rows } = await pool.query<OrderRow>(
      `SELECT ${orderColumns} FROM orders o JOIN clients c ON c.id = o.client_id
        WHERE o.partner_id = $1 AND o.id = $2`,
      [partnerId, request.params.id],
    );
    const row = rows[0];
    if (row === undefined) throw new Refusal(404, "not found");
    return { result: orderView(row) };
  };
  app.get("/v1/partner/orders/:id", oneOrder);
  app.get("/bare/orders/:id", bareTwin(oneOrder));

  const ordersPage = async (
    request: FastifyRequest<{ Querystring: { page?: string; page_size?: string } }>,
  ) => {
    const page = Number(request.query.page ?? "1");
    const size = Number(request.query.page_size ?? "10");
    if (!Number.isInteger(page) || page < 1 || !Number.isInteger(size) || size < 1 || size > 100)
      throw new Refusal(400, "page");
    const { rows } = await pool.query<OrderRow & { total: string }>(
      `SELECT ${orderColumns}, count(*) OVER ()::text AS total
           FROM orders o JOIN clients c ON c.id = o.client_id
          WHERE o.partner_id = $1
          ORDER BY o.created_at DESC, o.id DESC
          LIMIT $2 OFFSET $3`,
      [partnerId, size, (page - 1) * size],
    );
    return {
      items: rows.map(orderView),
      page,
      page_size: size,
      total: Number(rows[0]?.total ?? 0),
    };
  };
  app.get("/v1/partner/orders", ordersPage);
  app.get("/bare/orders", bareTwin(ordersPage));

  // -------------------------------------------------------------------------------------------
  // Writes, on the reference's own tables

  /**
   * One statement on a checked-out connection, in pg's callback form: its promise form costs each
   * statement's answer a trip to the old generation (docs/decisions.md, "A statement's answer
   * through pg's callback form"), which `pool.query`, the callback form inside, does not pay.
   */
  function send<R extends pg.QueryResultRow = pg.QueryResultRow>(
    c: pg.PoolClient,
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>> {
    return new Promise((resolve, reject) => {
      const answer = (err: Error | null, result: pg.QueryResult<R>) => (err ? reject(err) : resolve(result));
      if (values === undefined) c.query<R>(text, answer);
      else c.query<R>(text, values, answer);
    });
  }

  /** BEGIN … COMMIT on one connection; any refusal or error rolls back. */
  async function inTransaction<T>(work: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    const c = await pool.connect();
    try {
      await send(c, "BEGIN");
      const out = await work(c);
      await send(c, "COMMIT");
      return out;
    } catch (err) {
      await send(c, "ROLLBACK").catch(() => {});
      throw err;
    } finally {
      c.release();
    }
  }

  const funding = (type: "deposit" | "withdrawal") =>
    async function fund(request: FastifyRequest, reply: FastifyReply) {
      const body = request.body as Record<string, unknown> | null;
      const pcid = body?.partner_client_id;
      const asset = body?.asset_id;
      const ref = body?.partner_order_ref;
      const amount = typeof body?.amount === "string" ? parseDecimal(body.amount) : null;
      if (typeof pcid !== "string" || typeof asset !== "string" || typeof ref !== "string")
        throw new Refusal(400, "fields");
      if (amount === null || amount <= 0n) throw new Refusal(422, "amount");
      const delta = formatDecimal(type === "deposit" ? amount : -amount);
      const order = await inTransaction(async (c) => {
        const inserted = await send<{ id: string; created_at: Date }>(
          c,
          `INSERT INTO ref_orders (partner_id, partner_client_id, partner_order_ref, type, asset_id, amount)
           VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (partner_id, partner_order_ref) DO NOTHING
           RETURNING id, created_at`,
          [partnerId, pcid, ref, type, asset, formatDecimal(amount)],
        );
        const row = inserted.rows[0];
        if (row === undefined) throw new Refusal(409, "duplicate reference");
        const moved = await send(
          c,
          `UPDATE ref_balances SET balance = balance + $4
            WHERE partner_id = $1 AND partner_client_id = $2 AND asset_id = $3 AND balance + $4 >= 0`,
          [partnerId, pcid, asset, delta],
        );
        if (moved.rowCount !== 1) throw new Refusal(422, "unknown client or insufficient funds");
        return row;
      });
      return reply.send({
        result: {
          id: Number(order.id),
          partner_order_ref: ref,
          partner_client_id: pcid,
          type,
          status: "completed",
          asset_id: asset,
          amount: formatDecimal(amount),
          created_at: order.created_at,
        },
      });
    };
  app.post("/v1/partner/deposits", funding("deposit"));
  app.post("/v1/partner/withdrawals", funding("withdrawal"));

  app.post("/v1/partner/quotes", async (request: FastifyRequest) => {
    const body = request.body as Record<string, unknown> | null;
    const pcid = body?.partner_client_id;
    const pairId = body?.asset_pair;
    const side = body?.side;
    const base = typeof body?.base_amount === "string" ? parseDecimal(body.base_amount) : null;
    if (typeof pcid !== "string" || typeof pairId !== "string" || (side !== "buy" && side !== "sell"))
      throw new Refusal(400, "fields");
    if (base === null || base <= 0n) throw new Refusal(422, "base_amount");
    const { rows } = await pool.query<PairRow & { fee_rate: string; lifetime_s: number }>(
      `SELECT id, base_id, quote_id, buy::text, sell::text, tradable, fee_rate::text, lifetime_s
         FROM asset_pairs WHERE id = $1`,
      [pairId],
    );
    const pair = rows[0];
    if (pair === undefined || !pair.tradable) throw new Refusal(400, "pair");
    const price = money(side === "buy" ? pair.buy : pair.sell);
    const quoteAmount = mul(base, price, side === "buy" ? "up" : "down");
    const fee = mul(quoteAmount, money(pair.fee_rate), "up");
    const token = crypto.randomBytes(32).toString("base64url");
    const inserted = await pool.query<{ expires_at: Date }>(
      `INSERT INTO ref_quotes (token_hash, partner_id, partner_client_id, pair_id, base_id, quote_id, side,
                               price, base_amount, quote_amount, fee, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now() + make_interval(secs => $12))
       RETURNING expires_at`,
      [
        crypto.createHash("sha256").update(token).digest(),
        partnerId,
        pcid,
        pair.id,
        pair.base_id,
        pair.quote_id,
        side,
        formatDecimal(price),
        formatDecimal(base),
        formatDecimal(quoteAmount),
        formatDecimal(fee),
        pair.lifetime_s,
      ],
    );
    return {
      result: {
        token,
        asset_pair: pair.id,
        side,
        price: formatDecimal(price),
        base_amount: formatDecimal(base),
        quote_amount: formatDecimal(quoteAmount),
        fee: formatDecimal(fee),
        expires_at: inserted.rows[0]?.expires_at,
      },
    };
  });

  app.post("/v1/partner/quotes/execute", async (request: FastifyRequest) => {
    const body = request.body as Record<string, unknown> | null;
    const pcid = body?.partner_client_id;
    const token = body?.token;
    if (typeof pcid !== "string" || typeof token !== "string") throw new Refusal(400, "fields");
    const tokenHash = crypto.createHash("sha256").update(token).digest();
    return inTransaction(async (c) => {
      const spent = await send<QuoteRow>(
        c,
        `UPDATE ref_quotes SET spent_at = now()
          WHERE token_hash = $1 AND partner_id = $2 AND partner_client_id = $3
            AND spent_at IS NULL AND expires_at > now()
          RETURNING side, base_id, quote_id, price::text, base_amount::text, quote_amount::text, fee::text`,
        [tokenHash, partnerId, pcid],
      );
      const q = spent.rows[0];
      if (q === undefined) throw new Refusal(400, "invalid trading token");
      const buying = q.side === "buy";
      const base = money(q.base_amount);
      const total = buying ? money(q.quote_amount) + money(q.fee) : money(q.quote_amount) - money(q.fee);
      const inserted = await send<{ id: string; created_at: Date }>(
        c,
        `INSERT INTO ref_orders (partner_id, partner_client_id, type, asset_id, amount, counter_asset_id,
                                 counter_amount, price, fee)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         RETURNING id, created_at`,
        [partnerId, pcid, q.side, q.base_id, q.base_amount, q.quote_id, formatDecimal(total), q.price, q.fee],
      );
      const move = async (asset: string, delta: bigint) => {
        const r = await send(
          c,
          `UPDATE ref_balances SET balance = balance + $4
            WHERE partner_id = $1 AND partner_client_id = $2 AND asset_id = $3 AND balance + $4 >= 0`,
          [partnerId, pcid, asset, formatDecimal(delta)],
        );
        if (r.rowCount !== 1) throw new Refusal(422, "insufficient funds");
      };
      // What the client gives first: a refusal there spares the second update.
      if (buying) {
        await move(q.quote_id, -total);
        await move(q.base_id, base);
      } else {
        await move(q.base_id, -base);
        await move(q.quote_id, total);
      }
      const order = inserted.rows[0];
      return {
        result: {
          id: Number(order?.id),
          partner_client_id: pcid,
          type: q.side,
          status: "completed",
          price: q.price,
          base_amount: q.base_amount,
          quote_amount: formatDecimal(total),
          fee: q.fee,
          created_at: order?.created_at,
        },
      };
    });
  });

  await app.listen({ host: "127.0.0.1", port: 0 });
  let closing = false;
  process.on("SIGTERM", () => {
    if (closing) return;
    closing = true;
    void app
      .close()
      .then(() => pool.end())
      .finally(() => process.exit(0));
  });
  // The primary handles ^C for the whole group.
  process.on("SIGINT", () => {});
}

// ---------------------------------------------------------------------------------------------

interface PairRow {
  id: string;
  base_id: string;
  quote_id: string;
  buy: string;
  sell: string;
  tradable: boolean;
}

interface OrderRow {
  id: string;
  partner_order_ref: string | null;
  partner_client_id: string;
  type: string;
  source: string;
  status: string;
  price: string | null;
  credit: string | null;
  credit_asset_id: string | null;
  debit: string | null;
  debit_asset_id: string | null;
  fee: string;
  fee_asset_id: string;
  vat: string;
  created_at: Date;
  transitioned_at: Date;
  updated_at: Date;
}

interface QuoteRow {
  side: string;
  base_id: string;
  quote_id: string;
  price: string;
  base_amount: string;
  quote_amount: string;
  fee: string;
}

/** numeric(38, 8) text from PostgreSQL as scaled bigint. */
function money(text: string): bigint {
  const v = parseDecimal(text);
  if (v === null) throw new Error(`not a decimal: ${text}`);
  return v;
}

const decimalOrNull = (text: string | null) => (text === null ? null : formatDecimal(money(text)));

function pairView(p: PairRow) {
  return {
    id: p.id,
    base_id: p.base_id,
    quote_id: p.quote_id,
    buy: formatDecimal(money(p.buy)),
    sell: formatDecimal(money(p.sell)),
    tradable: p.tradable,
  };
}

function orderView(o: OrderRow) {
  return {
    id: Number(o.id),
    partner_order_ref: o.partner_order_ref,
    partner_client_id: o.partner_client_id,
    type: o.type,
    source: o.source,
    status: o.status,
    price: decimalOrNull(o.price),
    credit: decimalOrNull(o.credit),
    credit_asset_id: o.credit_asset_id,
    debit: decimalOrNull(o.debit),
    debit_asset_id: o.debit_asset_id,
    fee: formatDecimal(money(o.fee)),
    fee_asset_id: o.fee_asset_id,
    vat: formatDecimal(money(o.vat)),
    created_at: o.created_at,
    transitioned_at: o.transitioned_at,
    updated_at: o.updated_at,
  };
}
