// A partner API to drive with signed requests, the same way whatever runs behind it: in-process
// through one test context (PGlite by default), or two real `counterpart serve` processes sharing
// one fresh PostgreSQL database (the claim "several API processes on one PostgreSQL" is made
// there). Either way the test also gets the database itself, to insert fixtures and check the
// ledger.

import assert from "node:assert/strict";
import fs from "node:fs";
import { generateKeyPair, parseDecimal, signRequest } from "@counterpart/protocol";
import pg from "pg";
import { type DatabaseHandle, type Db, openDatabase } from "../db/database.ts";
import { startTestContext, type TestContext, testDatabaseUrl } from "./harness.ts";
import { type ServiceProcess, startService, tempDataDir } from "./processes.ts";

export interface ApiResponse {
  status: number;
  /** The parsed JSON body (null when the body is not JSON). */
  body: unknown;
}

export interface SignedCall {
  method: "GET" | "POST";
  /** Path and query, exactly as sent and signed. */
  url: string;
  body?: unknown;
  /** Which API process serves it (taken modulo the number of processes); 0 by default. */
  via?: number;
  /**
   * Signing time, on the clock the API judges by (see `nowMs`); now by default. Ed25519 is
   * deterministic: identical POSTs signed in the same millisecond carry the same signature, and
   * all but one would be refused as replays, so identical bodies need distinct times.
   */
  timestampMs?: number;
}

export interface SignedApi {
  readonly description: string;
  /** Number of API processes requests are spread over. */
  readonly processes: number;
  readonly partnerId: string;
  readonly db: Db;
  /** The time the API's clock shows (the test context's manual clock, or the system clock). */
  nowMs(): number;
  call(c: SignedCall): Promise<ApiResponse>;
  /** An admin API request (bearer token), e.g. PUT /admin/pairs/BTC-AED/price. */
  admin(method: "GET" | "POST" | "PUT", url: string, body?: unknown): Promise<ApiResponse>;
  /** What the API processes wrote (empty in-process), for failure messages. */
  logs(): string;
  close(): Promise<void>;
}

/** The parsed JSON of a response body, or null when it is not JSON. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** One test context: requests go through app.inject, signed at the context clock's time. */
export async function startInProcessApi(): Promise<SignedApi> {
  const ctx: TestContext = await startTestContext();
  return {
    description: `in-process (${ctx.services.database.kind})`,
    processes: 1,
    partnerId: ctx.partner.id,
    db: ctx.services.database.db,
    nowMs: () => ctx.clock.nowMs(),
    async call(c) {
      const res = await ctx.signed({
        method: c.method,
        url: c.url,
        ...(c.body === undefined ? {} : { body: c.body }),
        // Without a time the context advances its clock by 1 ms per request.
        ...(c.timestampMs === undefined ? {} : { timestampMs: c.timestampMs }),
      });
      let body: unknown = null;
      try {
        body = res.json();
      } catch {
        body = null;
      }
      return { status: res.statusCode, body };
    },
    async admin(method, url, body) {
      const res = await ctx.adminRequest(method, url, body);
      return { status: res.statusCode, body: parseJson(res.body) };
    },
    logs: () => "",
    close: () => ctx.close(),
  };
}

const adminToken = "concurrency-admin-token-0123456789";

/**
 * Creates a database on the TEST_DATABASE_URL server, starts two `counterpart serve` processes on
 * it (the first with the admin API, the second with ADMIN_PORT=off, as an extra API process would
 * run), and creates a partner through the admin API. `close` stops both, drops the database and
 * removes the data folders, also when the start failed half-way.
 */
export async function startTwoProcessApi(options: { requestTimeoutMs?: number } = {}): Promise<SignedApi> {
  if (testDatabaseUrl === null) throw new Error("startTwoProcessApi needs TEST_DATABASE_URL");
  const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  const serverUrl = testDatabaseUrl;
  const dbName = `cp_conc_${process.pid}_${Date.now()}`;
  const databaseUrl = new URL(serverUrl);
  databaseUrl.pathname = `/${dbName}`;

  const services: ServiceProcess[] = [];
  const dataDirs: string[] = [];
  let handle: DatabaseHandle | null = null;
  let created = false;

  async function close(): Promise<void> {
    const problems: unknown[] = [];
    await Promise.all(
      services.map((s) =>
        s.child.exitCode === null && s.child.signalCode === null
          ? s.stop().catch((err: unknown) => void problems.push(err))
          : undefined,
      ),
    );
    if (handle !== null) await handle.close().catch((err: unknown) => void problems.push(err));
    if (created) {
      const admin = new pg.Client({ connectionString: serverUrl });
      try {
        await admin.connect();
        await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      } catch (err) {
        problems.push(err);
      } finally {
        await admin.end().catch(() => {});
      }
    }
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
    if (problems.length > 0) throw new AggregateError(problems, "cleanup of the two-process API failed");
  }

  try {
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${dbName}`);
      created = true;
    } finally {
      await admin.end();
    }

    const common = {
      DATABASE_URL: databaseUrl.toString(),
      ADMIN_TOKEN: adminToken,
      PORT: "0",
      PRICE_FEED: "manual",
      LOG_LEVEL: "warn",
    };
    // One after the other: the first migrates and seeds; the second finds that done.
    for (const adminPort of ["0", "off"]) {
      const dataDir = tempDataDir();
      dataDirs.push(dataDir);
      services.push(await startService({ ...common, ADMIN_PORT: adminPort, DATA_DIR: dataDir }));
    }
    const adminUrl = services[0]!.adminUrl;
    if (adminUrl === null) throw new Error("the first process has no admin API");
    if (services[1]!.adminUrl !== null) throw new Error("the second process runs an admin API");

    const keys = generateKeyPair();
    const res = await fetch(`${adminUrl}/admin/partners`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({
        name: "Concurrency Partner",
        public_key_pem: keys.publicKeyPem,
        allowed_ips: ["127.0.0.1/32", "::1/128"],
      }),
      signal: AbortSignal.timeout(requestTimeoutMs),
    });
    const text = await res.text();
    if (res.status !== 201) throw new Error(`partner create answered ${res.status}: ${text}`);
    const partnerId = (JSON.parse(text) as { result: { id: string } }).result.id;

    handle = await openDatabase({ databaseUrl: databaseUrl.toString(), pgliteDir: null, poolSize: 4 });
    const db = handle.db;
    const urls = services.map((s) => s.partnerUrl);

    return {
      description: "two API processes on one PostgreSQL database",
      processes: urls.length,
      partnerId,
      db,
      nowMs: () => Date.now(),
      async call(c) {
        const payload = c.body === undefined ? undefined : JSON.stringify(c.body);
        const headers: Record<string, string> = {
          ...signRequest({
            partnerId,
            privateKey: keys.privateKeyPem,
            method: c.method,
            target: c.url,
            body: payload ?? "",
            nowMs: c.timestampMs ?? Date.now(),
          }),
        };
        if (payload !== undefined) headers["content-type"] = "application/json";
        const base = urls[(c.via ?? 0) % urls.length]!;
        const res = await fetch(`${base}${c.url}`, {
          method: c.method,
          headers,
          ...(payload === undefined ? {} : { body: payload }),
          signal: AbortSignal.timeout(requestTimeoutMs),
        });
        const text = await res.text();
        let body: unknown = null;
        try {
          body = JSON.parse(text);
        } catch {
          body = null;
        }
        return { status: res.status, body };
      },
      async admin(method, url, body) {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const res = await fetch(`${adminUrl}${url}`, {
          method,
          headers: {
            authorization: `Bearer ${adminToken}`,
            ...(payload === undefined ? {} : { "content-type": "application/json" }),
          },
          ...(payload === undefined ? {} : { body: payload }),
          signal: AbortSignal.timeout(requestTimeoutMs),
        });
        return { status: res.status, body: parseJson(await res.text()) };
      },
      logs: () => services.map((s, i) => `--- API process ${i + 1}\n${s.output()}`).join("\n"),
      close,
    };
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
}

/** A decimal string of the wire format as a scale-8 bigint. */
export function scaled(text: string | null | undefined): bigint {
  const value = typeof text === "string" ? parseDecimal(text) : null;
  assert.notEqual(value, null, `not a decimal: ${text}`);
  return value!;
}

/** How many responses of each kind: "200", or "<status>/<code>" for errors. */
export function tally(responses: readonly ApiResponse[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of responses) {
    const code = (r.body as { code?: unknown } | null)?.code;
    const key = r.status === 200 ? "200" : `${r.status}/${String(code)}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : 1)));
}
