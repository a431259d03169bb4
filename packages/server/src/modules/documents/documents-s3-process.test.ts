// End to end with FILE_STORE=s3: real `counterpart serve` processes configured only through their
// environment (credentials through the AWS SDK's own variables) against a real S3-compatible
// server started here. A partner uploads a document through the signed API and downloads it
// through its link. On PostgreSQL two API processes share the database and the bucket, and the
// link is followed on the process that did not take the upload: nothing is on either's disk.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { generateKeyPair, signRequest } from "@counterpart/protocol";
import pg from "pg";
import { clientPayload, multipartBody, sampleFile } from "../../testing/fixtures.ts";
import { testDatabaseUrl } from "../../testing/harness.ts";
import { type ServiceProcess, startService, tempDataDir } from "../../testing/processes.ts";
import { startTestS3, type TestS3 } from "../../testing/s3-server.ts";

const adminToken = "documents-s3-admin-token-0123456789";
const fileUrlSecret = "documents-s3-file-url-secret-0123456789abcdef";
const requestMs = 20_000;
const pcid = "s3-process-client";

describe("FILE_STORE=s3, end to end through the service processes", () => {
  let s3: TestS3;
  const services: ServiceProcess[] = [];
  const dataDirs: string[] = [];
  let dropDatabase: (() => Promise<void>) | undefined;
  let partnerId = "";
  let privateKey = "";
  let lastSigned = 0;

  async function signedFetch(
    base: string,
    method: "GET" | "POST",
    target: string,
    body?: { bytes: Buffer; contentType: string },
  ): Promise<Response> {
    lastSigned = Math.max(Date.now(), lastSigned + 1);
    const headers: Record<string, string> = signRequest({
      partnerId,
      privateKey,
      method,
      target,
      body: body?.bytes ?? "",
      nowMs: lastSigned,
    });
    if (body !== undefined) headers["content-type"] = body.contentType;
    return fetch(`${base}${target}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: body.bytes }),
      signal: AbortSignal.timeout(requestMs),
    });
  }

  before(async () => {
    s3 = await startTestS3("kyc-end-to-end");
    const common: Record<string, string> = {
      ...s3.env,
      ADMIN_TOKEN: adminToken,
      FILE_URL_SECRET: fileUrlSecret,
      LOG_LEVEL: "info",
    };
    let processes = 1;
    if (testDatabaseUrl !== null) {
      const dbName = `cp_docs_s3_${process.pid}_${Date.now()}`;
      const admin = new pg.Client({ connectionString: testDatabaseUrl });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${dbName}`);
      dropDatabase = async () => {
        await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
        await admin.end();
      };
      const url = new URL(testDatabaseUrl);
      url.pathname = `/${dbName}`;
      common.DATABASE_URL = url.toString();
      processes = 2;
    }
    // One after the other: the first migrates and runs the admin API; a second is an extra API process.
    for (let i = 0; i < processes; i++) {
      const dataDir = tempDataDir();
      dataDirs.push(dataDir);
      // The harness's own start bound (120 s): a cold PGlite start on a loaded machine has passed 90 s.
      services.push(await startService({ ...common, DATA_DIR: dataDir, ADMIN_PORT: i === 0 ? "0" : "off" }));
    }
    const keys = generateKeyPair();
    privateKey = keys.privateKeyPem;
    const created = await fetch(`${services[0]!.adminUrl}/admin/partners`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({
        name: "Object Storage Partner",
        public_key_pem: keys.publicKeyPem,
        allowed_ips: ["127.0.0.1/32", "::1/128"],
      }),
      signal: AbortSignal.timeout(requestMs),
    });
    assert.equal(created.status, 201, await created.clone().text());
    partnerId = ((await created.json()) as { result: { id: string } }).result.id;
  });

  after(async () => {
    try {
      await Promise.all(
        services.map((s) => (s.child.exitCode === null && s.child.signalCode === null ? s.stop() : null)),
      );
    } finally {
      await dropDatabase?.();
      for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
      await s3?.close();
    }
  });

  test("upload through the signed API, download through the link, from the bucket", async () => {
    const first = services[0]!.partnerUrl;
    const last = services.at(-1)!.partnerUrl;
    const clientBody = Buffer.from(JSON.stringify(clientPayload(1, { partner_client_id: pcid })));
    const client = await signedFetch(first, "POST", "/v1/partner/clients", {
      bytes: clientBody,
      contentType: "application/json",
    });
    assert.equal(client.status, 201, await client.text());

    const front = sampleFile("jpeg", 40_000);
    const back = sampleFile("heic", 30_000);
    const form = multipartBody([
      { name: "type", data: "residency_visa" },
      { name: "front_file", filename: "front.jpg", contentType: "image/jpeg", data: front },
      { name: "back_file", filename: "back.heic", contentType: "image/heic", data: back },
    ]);
    const docs = `/v1/partner/clients/${pcid}/documents`;
    const uploaded = await signedFetch(first, "POST", docs, {
      bytes: form.body,
      contentType: form.contentType,
    });
    const text = await uploaded.text();
    assert.equal(uploaded.status, 201, text);
    const id = (JSON.parse(text) as { result: { id: number } }).result.id;

    // Read on the last process (the other one on PostgreSQL), and follow the links there, as a
    // partner behind a load balancer would.
    const read = await signedFetch(last, "GET", `${docs}/${id}`);
    assert.equal(read.status, 200);
    const doc = ((await read.json()) as { result: { front_file: string; back_file: string } }).result;
    const keys: string[] = [];
    for (const [link, bytes, type] of [
      [doc.front_file, front, "image/jpeg"],
      [doc.back_file, back, "image/heic"],
    ] as const) {
      assert.ok(link.startsWith(`${last}/v1/files/`), link);
      keys.push(new URL(link).pathname.split("/").at(-1)!);
      const got = await fetch(link, { signal: AbortSignal.timeout(requestMs) });
      assert.equal(got.status, 200);
      assert.equal(got.headers.get("content-type"), type);
      assert.ok(Buffer.from(await got.arrayBuffer()).equals(bytes));
    }
    assert.deepEqual(await s3.keys(), keys.sort());
    for (const dir of dataDirs)
      assert.equal(fs.existsSync(path.join(dir, "files")), false, `${dir} has files`);
    for (const s of services) {
      assert.match(s.output(), /file store: the S3 bucket answers/);
      assert.doesNotMatch(s.output(), /file store unavailable|unexpected failure/);
    }
  });
});
