// The replay guard survives a crash of PostgreSQL (docs/decisions.md, "The replay guard survives a
// crash"): requests acknowledged before a crash restart (`pg_ctl -m immediate`) are refused as
// replays after it, and their replays change nothing. The three requests chosen are the ones no
// other logged state guards: a client update, an activation and a document upload.

import assert from "node:assert/strict";
import fs from "node:fs";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { generateKeyPair, signRequest } from "@counterpart/protocol";
import { type DatabaseHandle, openDatabase } from "../../db/database.ts";
import {
  clientPayload,
  clientsState,
  insertClient,
  multipartBody,
  sampleFile,
} from "../../testing/fixtures.ts";
import { type PgCluster, startPgCluster } from "../../testing/pg-cluster.ts";
import { type ServiceProcess, startService } from "../../testing/processes.ts";

const adminToken = "replay-crash-admin-token-0123456789";
const unauthorized = { code: 401, msg: "Unauthorized", msg_detail: null };

/** A request exactly as sent: resending it is a byte-for-byte replay. */
interface Sent {
  method: string;
  target: string;
  headers: Record<string, string>;
  body: Buffer;
}

function updateBody(name: string): string {
  const {
    partner_client_id: _p,
    account_type: _a,
    birth_date: _b,
    place_of_birth_id: _pob,
    ...rest
  } = clientPayload(1);
  return JSON.stringify({ ...rest, name });
}

describe("the replay guard across a crash restart of PostgreSQL", { timeout: 300_000 }, () => {
  let cluster: PgCluster;
  let handle: DatabaseHandle;
  let svc: ServiceProcess;
  const keys = generateKeyPair();
  let partnerId = "";
  let lastMs = 0;

  before(async () => {
    cluster = await startPgCluster();
    const url = await cluster.createDatabase("cp_replay");
    // Starting on a loaded machine (the suite runs files two at a time) can be slow.
    svc = await startService({ DATABASE_URL: url, ADMIN_TOKEN: adminToken, LOG_LEVEL: "warn" }, 90_000);
    const res = await fetch(`${svc.adminUrl}/admin/partners`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({
        name: "Replays",
        public_key_pem: keys.publicKeyPem,
        allowed_ips: ["127.0.0.1/32"],
      }),
      // A process's first admin request compiles its schemas; on a loaded machine that can take long.
      signal: AbortSignal.timeout(60_000),
    });
    assert.equal(res.status, 201, await res.clone().text());
    partnerId = ((await res.json()) as { result: { id: string } }).result.id;
    handle = await openDatabase({ databaseUrl: url, pgliteDir: null, poolSize: 2 });
    await insertClient(handle.db, partnerId, 1);
  });

  after(async () => {
    await svc?.stop();
    await handle?.close().catch(() => {});
    await cluster?.destroy();
    if (svc !== undefined) fs.rmSync(svc.dataDir, { recursive: true, force: true });
  });

  function sign(method: string, target: string, body: Buffer, contentType: string | null): Sent {
    // A distinct millisecond per request: identical requests signed in one would share a signature.
    lastMs = Math.max(Date.now(), lastMs + 1);
    const headers: Record<string, string> = {
      ...signRequest({ partnerId, privateKey: keys.privateKeyPem, method, target, body, nowMs: lastMs }),
    };
    if (contentType !== null) headers["content-type"] = contentType;
    return { method, target, headers, body };
  }

  async function send(s: Sent): Promise<{ status: number; body: unknown }> {
    const res = await fetch(`${svc.partnerUrl}${s.target}`, {
      method: s.method,
      headers: s.headers,
      body: s.body.length > 0 ? new Uint8Array(s.body) : null,
      signal: AbortSignal.timeout(20_000),
    });
    const text = await res.text();
    return { status: res.status, body: text === "" ? null : JSON.parse(text) };
  }

  const json = (method: string, target: string, body: string) =>
    sign(method, target, Buffer.from(body), "application/json");

  test("a client PUT, an activation and an upload acknowledged before the crash are 401 replays after it", async () => {
    const clientUrl = "/v1/partner/clients/client-1/";
    const activationUrl = "/v1/partner/clients/client-1/activation";
    const { body: form, contentType } = multipartBody([
      { name: "type", data: "government_id" },
      { name: "front_file", filename: "id.png", contentType: "image/png", data: sampleFile("png") },
    ]);

    // Each request is followed by a later one that its replay would undo or repeat.
    const putOld = json("PUT", clientUrl, updateBody("Old Name"));
    assert.equal((await send(putOld)).status, 200);
    assert.equal((await send(json("PUT", clientUrl, updateBody("New Name")))).status, 200);
    const deactivate = json("PUT", activationUrl, JSON.stringify({ active: false }));
    assert.equal((await send(deactivate)).status, 204);
    assert.equal((await send(json("PUT", activationUrl, JSON.stringify({ active: true })))).status, 204);
    const upload = sign("POST", "/v1/partner/clients/client-1/documents", form, contentType);
    const uploaded = await send(upload);
    assert.equal(uploaded.status, 201, JSON.stringify(uploaded.body));

    const before = await clientsState(handle.db);
    assert.equal(before.documents, 1);
    const signedAt = Math.min(...[putOld, deactivate, upload].map((s) => Number(s.headers["X-Timestamp"])));

    await cluster.crashRestart();

    // The service reconnects by itself; wait (bounded) until it answers a signed GET again.
    for (let i = 0; ; i++) {
      const probe = await send(sign("GET", "/v1/partner/asset-pairs", Buffer.alloc(0), null));
      if (probe.status === 200) break;
      assert.equal(probe.status, 503);
      assert.ok(i < 200, "the service did not recover after the restart");
      await sleep(50);
    }
    // The replays must still fall inside the signature window, or they would be refused as stale.
    assert.ok(Date.now() - signedAt < 50_000, "the restart took too long for the test to mean anything");

    for (const replay of [putOld, deactivate, upload]) {
      const res = await send(replay);
      assert.deepEqual(res, { status: 401, body: unauthorized }, `${replay.method} ${replay.target}`);
    }
    const afterReplays = await clientsState(handle.db);
    assert.deepEqual(afterReplays, before);
    const row = await handle.db
      .selectFrom("clients")
      .select(["name", "active"])
      .where("partner_id", "=", partnerId)
      .executeTakeFirstOrThrow();
    assert.deepEqual(row, { name: "New Name", active: true });
  });
});
