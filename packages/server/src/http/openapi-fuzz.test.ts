// Fuzzing every operation of docs/openapi.json over real HTTP. The requests are derived from the
// document (testing/openapi-fuzz.ts): valid ones from each operation's parameters and body schema,
// with ids that exist (clients, orders, documents and links created first, through the API), and
// broken ones of every kind. Signed operations are signed correctly, so the requests get past
// authentication into validation and the use cases. Every response must be documented for its
// operation (status and code), errors must have the documented shape, 2xx bodies must match their
// schema, no body may carry library text, and the service must still answer after each operation.
//
// FUZZ_SEED replays another run (the seed is printed with any failure); FUZZ_RUNS changes the
// number of requests per operation (1,000 by default); FUZZ_OPERATIONS (operation ids, comma
// separated) fuzzes only those.

import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { signRequest } from "@counterpart/protocol";
import fc from "fast-check";
import { limits } from "../config/limits.ts";
import { feedSettled } from "../testing/events.ts";
import { clientPayload, insertClient, sampleFile } from "../testing/fixtures.ts";
import { startTestContext, type TestContext, type TestPartner } from "../testing/harness.ts";
import {
  type DocumentedOperation,
  datetimeTexts,
  decimalTexts,
  documentedOperations,
  type JsonSchema,
  Live,
  loadOpenApiDocument,
  type Mutant,
  matchesTemplate,
  materialise,
  proseOf,
  RawHttpClient,
  type RawResponse,
  type RequestDraft,
  type RequestOptions,
  ResponseChecker,
  requestArbitrary,
  resolveSchema,
} from "../testing/openapi-fuzz.ts";
import { tempDataDir } from "../testing/processes.ts";

const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 20_261_121;
const runs = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : 1000;
/** Requests in flight at once. */
const concurrency = 4;
const requestTimeoutMs = 15_000;
/** Each operation's requests must all be answered within this. */
const operationBudgetMs = 240_000;

const doc = loadOpenApiDocument(path.resolve(import.meta.dirname, "../../../../docs/openapi.json"));
const operations = documentedOperations(doc);
const only = process.env.FUZZ_OPERATIONS ? new Set(process.env.FUZZ_OPERATIONS.split(",")) : null;
const fuzzed = operations.filter((op) => only === null || only.has(op.id));

/** What exists on the server, by the parameter and property names the document uses. */
interface Known {
  /** The partner's own clients, verified and active. */
  clients: string[];
  /** Clients that fail later checks: deactivated, unverified, another partner's. */
  otherClients: string[];
  assets: string[];
  fiat: string[];
  countries: string[];
  pairs: string[];
  orders: string[];
  refs: string[];
  documents: string[];
  fileKeys: string[];
  /** Download links (path and query) as the API returned them. */
  links: string[];
  /** Unspent quote tokens by client. */
  tokens: Map<string, string[]>;
  /** The partner's webhook endpoints, made afresh before each operation. */
  endpoints: string[];
  /** Event ids of the partner's feed. */
  events: string[];
}

const known: Known = {
  clients: [],
  otherClients: [],
  assets: [],
  fiat: [],
  countries: [],
  pairs: [],
  orders: [],
  refs: [],
  documents: [],
  fileKeys: [],
  links: [],
  tokens: new Map(),
  endpoints: [],
  events: [],
};

/** JSON bodies the service accepted during setup, by operation id. */
const examples = new Map<string, Record<string, unknown>[]>();

/** Datetimes around the test clock's day (testing/harness.ts), in the forms a partner may send. */
const datetimeText = datetimeTexts(new Date(Date.UTC(2026, 10, 20)), new Date(Date.UTC(2026, 10, 23)));

/** Hints for the translator: what exists, and the text a schema cannot describe. */
function hint(name: string | undefined, schema: JsonSchema): fc.Arbitrary<unknown> | undefined {
  const from = (values: readonly string[]) => (values.length === 0 ? undefined : fc.constantFrom(...values));
  switch (name) {
    case "partner_client_id": {
      const own = from(known.clients);
      const others = from(known.otherClients);
      if (own === undefined || others === undefined) return own;
      return fc.oneof({ weight: 5, arbitrary: own }, { weight: 1, arbitrary: others });
    }
    case "asset_id":
      return from(known.assets);
    case "country_id":
    case "residency_id":
    case "citizenship_id":
    case "place_of_birth_id":
      return from(known.countries);
    case "asset_pair_id":
    case "asset_pair":
      return from(known.pairs);
    case "order_id":
      return from(known.orders);
    case "document_id":
      return from(known.documents);
    case "key":
      return from(known.fileKeys);
    case "partner_order_ref": {
      const used = from(known.refs);
      const fresh = fc.uuid().map((u) => `ref-${u}`);
      return used === undefined
        ? fresh
        : fc.oneof({ weight: 1, arbitrary: used }, { weight: 2, arbitrary: fresh });
    }
    case "token":
      return fc.constant(new Live("token"));
    case "endpoint_id":
      return from(known.endpoints);
    case "event_id":
      return from(known.events);
    case "url":
      // Receivers on loopback (the fuzz context allows them): a valid registration is accepted.
      return fc.integer({ min: 1, max: 65_535 }).map((port) => `http://127.0.0.1:${port}/hooks`);
    case "phone":
      return fc.integer({ min: 0, max: 9_999_999 }).map((n) => `+97150${String(n).padStart(7, "0")}`);
  }
  if (name?.endsWith("_datetime")) return datetimeText;
  if (schema.type === "string" && /decimal string/.test(schema.description ?? "")) return decimalTexts;
  return undefined;
}

/** File contents: each format the document serves back, by its magic bytes, and junk. */
function fileArbitrary(): fc.Arbitrary<Mutant<Buffer>> {
  const formats: Record<string, "jpeg" | "png" | "heic" | "heif" | "pdf"> = {
    "image/jpeg": "jpeg",
    "image/png": "png",
    "image/heic": "heic",
    "image/heif": "heif",
    "application/pdf": "pdf",
  };
  const served = new Set<string>();
  for (const op of operations) {
    for (const response of Object.values(op.operation.responses)) {
      for (const media of Object.keys(response.content ?? {})) if (media in formats) served.add(media);
    }
  }
  const accepted = [...served].map((m) => formats[m]!);
  assert.ok(accepted.length > 0, "the document serves back file formats to upload");
  // Sizes from 1 KiB: every accepted format has a whole file of that size or more.
  const whole = fc
    .tuple(fc.constantFrom(...accepted), fc.integer({ min: 1024, max: 4096 }))
    .map(([format, size]) => ({ format, file: sampleFile(format, size) }));
  return fc.oneof(
    { weight: 40, arbitrary: whole.map(({ format, file }) => ({ label: format, value: file })) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(whole, fc.uint8Array({ minLength: 1, maxLength: 64 }))
        .map(([{ format, file }, tail]) => ({
          label: `${format} with bytes after its end`,
          value: Buffer.concat([file, tail]),
        })),
    },
    {
      weight: 2,
      arbitrary: fc.tuple(whole, fc.nat()).map(([{ format, file }, n]) => ({
        label: `${format} cut short`,
        value: file.subarray(0, n % file.length),
      })),
    },
    {
      weight: 2,
      arbitrary: fc
        .uint8Array({ maxLength: 512 })
        .map((u) => ({ label: "random bytes", value: Buffer.from(u) })),
    },
    { weight: 1, arbitrary: fc.constant({ label: "empty file", value: Buffer.alloc(0) }) },
    {
      // Rare: each is 5 MiB to build, send, hash and parse.
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom(...accepted), fc.boolean()).map(([format, over]) => ({
        label: over ? "file one byte over the size limit" : "file at the size limit",
        value: Buffer.concat([sampleFile(format, limits.documentFileBytesMax), Buffer.alloc(over ? 1 : 0)]),
      })),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(
          Buffer.from("<svg xmlns='http://www.w3.org/2000/svg'/>"),
          Buffer.from("GIF89a"),
          Buffer.from("MZ\u0090\u0000"),
          Buffer.from("PK\u0003\u0004"),
          Buffer.from("%PDF"),
        )
        .map((value) => ({ label: "another format", value })),
    },
  );
}

interface Finding {
  count: number;
  example: string;
}

/** What one operation's run produced. */
interface OperationRun {
  sent: number;
  valid: number;
  statuses: Map<string, number>;
  findings: Map<string, Finding>;
}

function excerpt(bytes: Buffer, max = 300): string {
  const text = bytes.toString("utf8");
  return JSON.stringify(text.length > max ? `${text.slice(0, max)}…(${bytes.length} bytes)` : text);
}

test("library text is looked for in words, not in random link tokens", () => {
  // A file link CI once drew, whose random id happened to hold "FST_".
  const link =
    '{"front_file":"http://127.0.0.1:38789/v1/files/zwMtRWghRCkavEWFST_2BjtHkmzHpOfjTbOE7AOVD4A?expires=1795254318"}';
  assert.equal(proseOf(link).includes("FST_"), false, proseOf(link));
  // Fastify's own codes, stack frames and parser phrases are kept.
  const leak = '{"message":"FST_ERR_CTP_BODY_TOO_LARGE Unexpected token } in JSON at position 12"}';
  assert.equal(proseOf(leak), leak);
  assert.ok(proseOf("x\n    at Object.parse (node:internal/deps)").includes("    at "));
});

describe("fuzzing every operation of the OpenAPI document over HTTP", { timeout: 30 * 60_000 }, () => {
  let ctx: TestContext;
  let dataDir: string;
  let http: RawHttpClient;
  let checker: ResponseChecker;
  let stranger: TestPartner;
  let requestNo = 0;
  /** Server-side errors behind 5xx answers, by request id. */
  const serverErrors = new Map<string, string>();
  const totals = new Map<string, number>();

  function signedHeaders(
    method: string,
    target: string,
    body: Buffer,
    partner: TestPartner,
  ): Record<string, string> {
    // A millisecond per request: no two requests share a signing time, so none is a replay.
    ctx.clock.advance(1);
    return signRequest({
      partnerId: partner.id,
      privateKey: partner.privateKeyPem,
      method,
      target,
      body,
      nowMs: ctx.clock.nowMs(),
    });
  }

  async function send(
    method: string,
    target: string,
    body: Buffer,
    contentType: string | null,
    signedBy: TestPartner | null,
  ): Promise<{ requestId: string; headers: Record<string, string>; response: RawResponse }> {
    const requestId = `fuzz-${++requestNo}`;
    const headers: Record<string, string> = { "x-request-id": requestId };
    if (contentType !== null) headers["content-type"] = contentType;
    if (signedBy !== null) Object.assign(headers, signedHeaders(method, target, body, signedBy));
    const response = await http.send({ method, target, headers, body }, requestTimeoutMs);
    return { requestId, headers, response };
  }

  /** A setup call that must succeed: JSON in, the parsed `result` or `items` out. */
  async function call(
    method: string,
    target: string,
    body?: unknown,
    partner: TestPartner | null = ctx.partner,
    expected = [200, 201, 204],
  ): Promise<Record<string, unknown>> {
    const bytes = body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(body));
    const { response } = await send(
      method,
      target,
      bytes,
      body === undefined ? null : "application/json",
      partner,
    );
    const text = response.body.toString("utf8");
    assert.ok(expected.includes(response.status), `${method} ${target}: ${response.status} ${text}`);
    const op = operations.find((o) => o.method === method && matchesTemplate(o.path, target));
    if (op !== undefined && body !== null && typeof body === "object" && partner === ctx.partner) {
      examples.set(op.id, [...(examples.get(op.id) ?? []), body as Record<string, unknown>]);
    }
    return text === "" ? {} : (JSON.parse(text) as Record<string, unknown>);
  }

  async function uploadDocument(partnerClientId: string): Promise<void> {
    const b = "----setup-boundary";
    const part = (name: string, data: Buffer, filename?: string) =>
      Buffer.concat([
        Buffer.from(
          `--${b}\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"` : ""}\r\n\r\n`,
        ),
        data,
        Buffer.from("\r\n"),
      ]);
    const body = Buffer.concat([
      part("type", Buffer.from("government_id")),
      part("front_file", sampleFile("jpeg", 1024), "front.jpg"),
      part("back_file", sampleFile("pdf", 1024), "back.pdf"),
      Buffer.from(`--${b}--\r\n`),
    ]);
    const target = `/v1/partner/clients/${encodeURIComponent(partnerClientId)}/documents`;
    const { response } = await send("POST", target, body, `multipart/form-data; boundary=${b}`, ctx.partner);
    assert.equal(response.status, 201, response.body.toString());
    const doc = (
      JSON.parse(response.body.toString()) as {
        result: { id: number; front_file: string; back_file: string };
      }
    ).result;
    known.documents.push(String(doc.id));
    for (const link of [doc.front_file, doc.back_file]) {
      const u = new URL(link);
      known.links.push(u.pathname + u.search);
      known.fileKeys.push(u.pathname.split("/").at(-1)!);
    }
  }

  async function quoteTokens(partnerClientId: string, n: number): Promise<void> {
    const tokens = known.tokens.get(partnerClientId) ?? [];
    known.tokens.set(partnerClientId, tokens);
    for (let i = 0; i < n; i++) {
      const q = await call("POST", "/v1/partner/quotes", {
        partner_client_id: partnerClientId,
        asset_pair: known.pairs.includes("USDT-AED") ? "USDT-AED" : known.pairs[0],
        side: "buy",
        base_amount: "1",
      });
      tokens.push((q.result as { token: string }).token);
    }
  }

  /** The partner's events of the feed (its clients' and orders'), which GET /events/{id} shows. */
  async function feedEvents(): Promise<void> {
    await feedSettled(ctx.services.database.db);
    const feed = await call("GET", "/v1/partner/events?limit=50");
    known.events = (feed.items as { id: string }[]).map((e) => String(e.id));
    assert.ok(known.events.length > 0, "the setup's clients and orders wrote events");
  }

  /** Four webhook endpoints of the partner, the only ones, whatever the last operation deleted or made. */
  async function freshEndpoints(): Promise<void> {
    const listed = (await call("GET", "/v1/partner/webhook-endpoints")).items as { id: string }[];
    for (const e of listed) await call("DELETE", `/v1/partner/webhook-endpoints/${e.id}`);
    known.endpoints = [];
    for (let i = 0; i < 4; i++) {
      const made = await call("POST", "/v1/partner/webhook-endpoints", {
        url: `http://127.0.0.1:9/hooks/${i}`,
        event_types: [],
      });
      known.endpoints.push(String((made.result as { id: string }).id));
    }
    // A test event delivered to each: events that redelivery can find for these endpoints.
    known.events = [];
    for (const id of known.endpoints) {
      const sent = await call(
        "POST",
        `/v1/partner/webhook-endpoints/${id}/test`,
        undefined,
        ctx.partner,
        [202],
      );
      known.events.push(String((sent.result as { event_id: string }).event_id));
    }
  }

  async function restore(): Promise<void> {
    for (const c of known.clients) {
      await call("PUT", `/v1/partner/clients/${encodeURIComponent(c)}/activation`, { active: true });
      for (const asset of known.fiat) {
        await call("POST", "/v1/partner/deposits", {
          partner_client_id: c,
          asset_id: asset,
          amount: "10000000",
          partner_order_ref: `topup-${crypto.randomUUID()}`,
        });
      }
    }
  }

  before(async () => {
    dataDir = tempDataDir();
    ctx = await startTestContext({
      // Quotes and prices that stay good for the whole run, so valid requests reach execution.
      // Webhook receivers on loopback over plain http, as an operator may allow (on PostgreSQL too).
      env: {
        DATA_DIR: dataDir,
        QUOTE_LIFETIME_S: "3600",
        PRICE_STALE_AFTER_S: "86400",
        WEBHOOK_ALLOW_PRIVATE: "true",
        WEBHOOK_ALLOW_HTTP: "true",
      },
      extraRoutes: (app) => {
        app.addHook("onError", async (request, _reply, error) => {
          serverErrors.set(
            request.id,
            String(error.stack ?? error.message)
              .split("\n")
              .slice(0, 4)
              .join(" | "),
          );
        });
      },
    });
    await ctx.app.listen({ host: "127.0.0.1", port: 0 });
    const port = (ctx.app.server.address() as AddressInfo).port;
    http = new RawHttpClient("127.0.0.1", port, concurrency);
    checker = new ResponseChecker(doc);

    const assets = (await call("GET", "/v1/public/assets", undefined, null)).items as {
      id: string;
      type: string;
      depositable: boolean;
      withdrawable: boolean;
      published: boolean;
    }[];
    known.assets = assets.map((a) => a.id);
    known.fiat = assets
      .filter((a) => a.type === "fiat" && a.depositable && a.withdrawable && a.published)
      .map((a) => a.id);
    known.countries = (
      (await call("GET", "/v1/public/countries", undefined, null)).items as { id: string }[]
    ).map((c) => c.id);
    known.pairs = ((await call("GET", "/v1/partner/asset-pairs")).items as { id: string }[]).map((p) => p.id);

    for (const n of [1, 2, 3, 4, 5]) {
      const payload = clientPayload(n);
      const created = await call("POST", "/v1/partner/clients", payload);
      const id = (created.result as { partner_client_id: string }).partner_client_id;
      (n === 5 ? known.otherClients : known.clients).push(id);
      const { partner_client_id, account_type, birth_date, place_of_birth_id, ...update } = payload;
      await call("PUT", `/v1/partner/clients/${encodeURIComponent(id)}/`, update);
    }
    await call("PUT", `/v1/partner/clients/${known.otherClients[0]}/activation`, { active: false });
    known.otherClients.push(
      (await insertClient(ctx.services.database.db, ctx.partner.id, 6, { status: "unverified" }))
        .partnerClientId,
    );

    // Another partner's client and order: must stay out of reach (2008, 404).
    stranger = await ctx.addPartner({ name: "Stranger" });
    // Tens of thousands of requests inside a few seconds of the injected clock: both partners get
    // the largest budgets, so that rate limiting stays on (its headers are part of every answer)
    // without turning the run into 429s. Rate limits have their own tests (rate-limits.test.ts).
    for (const partner of [ctx.partner, stranger]) {
      const budgets = {
        reads: limits.rateLimitPerWindowMax,
        writes: limits.rateLimitPerWindowMax,
        quotes: limits.rateLimitPerWindowMax,
      };
      const set = await ctx.adminRequest("PUT", `/admin/partners/${partner.id}/limits`, budgets);
      assert.equal(set.statusCode, 200, set.body);
    }
    const foreign = await call("POST", "/v1/partner/clients", clientPayload(7), stranger);
    const foreignId = (foreign.result as { partner_client_id: string }).partner_client_id;
    known.otherClients.push(foreignId);
    const foreignOrder = await call(
      "POST",
      "/v1/partner/deposits",
      {
        partner_client_id: foreignId,
        asset_id: known.fiat[0],
        amount: "100",
        partner_order_ref: "stranger-ref",
      },
      stranger,
    );
    known.orders.push(String((foreignOrder.result as { id: number }).id));
    known.refs.push("stranger-ref");

    await restore();
    for (const c of known.clients) {
      for (const asset of known.fiat) {
        const ref = `setup-w-${c}-${asset}`;
        const w = await call("POST", "/v1/partner/withdrawals", {
          partner_client_id: c,
          asset_id: asset,
          amount: "1.5",
          partner_order_ref: ref,
        });
        known.orders.push(String((w.result as { id: number }).id));
        known.refs.push(ref);
      }
      for (const [i, pair] of known.pairs.entries()) {
        const q = await call("POST", "/v1/partner/quotes", {
          partner_client_id: c,
          asset_pair: pair,
          side: "buy",
          base_amount: "1",
        });
        const ref = `setup-x-${c}-${i}`;
        const x = await call("POST", "/v1/partner/quotes/execute", {
          partner_client_id: c,
          token: (q.result as { token: string }).token,
          partner_order_ref: ref,
        });
        known.orders.push(String((x.result as { id: number }).id));
        known.refs.push(ref);
      }
      await uploadDocument(c);
    }
  });

  after(async () => {
    http?.close();
    await ctx?.close();
    if (dataDir !== undefined) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  function options(): RequestOptions {
    return {
      doc,
      hint,
      targets: (id) => (operations.find((o) => o.id === id)?.path.includes("{key}") ? known.links : []),
      files: fileArbitrary(),
      examples: (id) => examples.get(id) ?? [],
    };
  }

  /** The token of a quote by the client the request names, when one is left. */
  function resolveToken(holder: Record<string, unknown> | null): string {
    const client = typeof holder?.partner_client_id === "string" ? holder.partner_client_id : "";
    return known.tokens.get(client)?.pop() ?? `qt_${crypto.randomBytes(32).toString("base64url")}`;
  }

  function usesTokens(op: DocumentedOperation): boolean {
    const schema = op.operation.requestBody?.content["application/json"]?.schema;
    return schema !== undefined && "token" in (resolveSchema(schema, doc).properties ?? {});
  }

  async function exchange(op: DocumentedOperation, draft: RequestDraft, run: OperationRun): Promise<void> {
    const { body, contentType } = materialise(draft, (live, holder) => {
      if (live.name === "token") return resolveToken(holder);
      throw new Error(`no value for ${live.name}`);
    });
    const sentBy = op.signed ? ctx.partner : null;
    let problems: string[];
    let outcome: string;
    let requestId = "";
    let headers: Record<string, string> = {};
    try {
      const r = await send(draft.method, draft.target, body, contentType, sentBy);
      requestId = r.requestId;
      headers = r.headers;
      problems = checker.check({
        op,
        sent: { method: draft.method, target: draft.target, headers, body },
        response: r.response,
      });
      let code = "";
      try {
        const parsed = JSON.parse(r.response.body.toString("utf8")) as { code?: unknown };
        code = r.response.status >= 400 && parsed?.code !== undefined ? `/${String(parsed.code)}` : "";
      } catch {}
      outcome = `${r.response.status}${code}`;
      if (problems.length > 0) {
        const serverError = serverErrors.get(requestId);
        const example =
          `${draft.label}\n    request: ${draft.method} ${JSON.stringify(draft.target.slice(0, 300))}` +
          ` content-type ${JSON.stringify(contentType)} body ${excerpt(body)}` +
          `\n    response: ${r.response.status} ${excerpt(r.response.body, 400)}` +
          (serverError === undefined ? "" : `\n    server: ${serverError}`);
        // One example per problem, outcome and kind of request (the label up to its first ':').
        const kind = draft.label.split(":")[0];
        for (const p of problems) {
          const key = `${p} [${outcome}; ${kind}]`;
          const f = run.findings.get(key);
          if (f === undefined) run.findings.set(key, { count: 1, example });
          else f.count++;
        }
      }
    } catch (err) {
      outcome = "no answer";
      const key = `no answer: ${(err as Error).message}`;
      const example = `${draft.label}\n    request: ${draft.method} ${JSON.stringify(draft.target.slice(0, 300))} body ${excerpt(body)}`;
      const f = run.findings.get(key);
      if (f === undefined) run.findings.set(key, { count: 1, example });
      else f.count++;
    }
    run.sent++;
    if (draft.valid) run.valid++;
    run.statuses.set(outcome, (run.statuses.get(outcome) ?? 0) + 1);
  }

  for (const op of fuzzed) {
    const index = operations.indexOf(op);
    test(`${op.id}: ${op.method} ${op.path}`, async (t) => {
      await restore();
      if (op.path.startsWith("/v1/partner/webhook-endpoints")) await freshEndpoints();
      if (op.path.startsWith("/v1/partner/events/")) await feedEvents();
      if (usesTokens(op)) for (const c of known.clients) await quoteTokens(c, Math.ceil(runs / 8));
      const drafts = fc.sample(requestArbitrary(op, options(), limits.jsonBodyBytesMax), {
        seed: seed + index,
        numRuns: runs,
      });
      const run: OperationRun = { sent: 0, valid: 0, statuses: new Map(), findings: new Map() };
      const started = Date.now();
      const deadline = started + operationBudgetMs;
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < drafts.length && Date.now() < deadline) await exchange(op, drafts[next++]!, run);
        }),
      );
      const ms = Date.now() - started;
      totals.set(op.id, run.sent);
      const statuses = [...run.statuses].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}×${v}`);
      t.diagnostic(`${op.id}: ${run.sent} requests (${run.valid} valid) in ${ms} ms: ${statuses.join(" ")}`);

      // The service still answers, through authentication and the database.
      const health = await send("GET", "/healthz", Buffer.alloc(0), null, null);
      assert.equal(health.response.status, 200, "GET /healthz after the run");
      const pairs = await send("GET", "/v1/partner/asset-pairs", Buffer.alloc(0), null, ctx.partner);
      assert.equal(pairs.response.status, 200, "a signed read after the run");

      const findings = [...run.findings].sort(([, a], [, b]) => b.count - a.count);
      assert.equal(
        findings.length,
        0,
        `${op.id}: ${findings.length} kinds of finding (FUZZ_SEED=${seed} FUZZ_RUNS=${runs} to replay):\n` +
          findings
            .slice(0, 15)
            .map(([problem, f]) => `- ${problem} ×${f.count}\n    ${f.example}`)
            .join("\n"),
      );
      assert.equal(
        run.sent,
        runs,
        `${op.id}: only ${run.sent} of ${runs} requests within ${operationBudgetMs} ms`,
      );
      // Valid requests reach the use case: some of them succeed.
      if (runs >= 200) {
        const succeeded = [...run.statuses].filter(([k]) => k.startsWith("2")).reduce((n, [, v]) => n + v, 0);
        assert.ok(succeeded > 0, `${op.id}: no request succeeded`);
      }
    });
  }

  // Each operation's test asserts its own count of requests, so this one needs no other test to
  // have run: any test runs alone (--test-name-pattern) and in any order.
  test("FUZZ_OPERATIONS names at least one operation of the document", () => {
    assert.ok(fuzzed.length > 0, `no operation among FUZZ_OPERATIONS=${process.env.FUZZ_OPERATIONS}`);
  });

  // The recap of the operations that ran, whichever they were.
  after((t) => {
    const table = fuzzed
      .filter((op) => totals.has(op.id))
      .map((op) => `${op.id.padEnd(24)} ${String(totals.get(op.id)).padStart(6)}`);
    t.diagnostic(`requests per operation (seed ${seed}):\n${table.join("\n")}`);
  });
});
