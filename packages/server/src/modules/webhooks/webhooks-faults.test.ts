// Webhooks under faults (docs/reference.md, "Webhooks"; PostgreSQL only): three `counterpart serve`
// processes share one database and deliver to a real receiving server; one is killed with SIGKILL
// while deliveries are in flight. No event is lost: every event of the feed reaches the endpoint
// at least once, a duplicate carries the same X-Event-ID and the same body, and the deliveries
// agree with the feed.

import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { generateKeyPair, signRequest } from "@counterpart/protocol";
import pg from "pg";
import { feedSettledAt } from "../../testing/events.ts";
import { clientPayload } from "../../testing/fixtures.ts";
import { onPostgres, testDatabaseUrl } from "../../testing/harness.ts";
import { type ServiceProcess, startService, tempDataDir } from "../../testing/processes.ts";

const adminToken = "webhook-faults-admin-token-0123456789";

if (onPostgres) {
  describe("webhooks: three API processes, one killed mid-delivery (PostgreSQL)", () => {
    const dbName = `cp_hooks_${process.pid}_${Date.now()}`;
    const services: ServiceProcess[] = [];
    const dataDirs: string[] = [];
    const received = new Map<string, string[]>();
    let inFlight = 0;
    let server: http.Server;
    let created = false;

    before(async () => {
      // The receiver answers each delivery after a moment, so that some are in flight at the kill.
      server = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => {
          const id = String(req.headers["x-event-id"]);
          received.set(id, [...(received.get(id) ?? []), Buffer.concat(chunks).toString("utf8")]);
          inFlight++;
          setTimeout(() => {
            inFlight--;
            res.end("ok");
          }, 200);
        });
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const admin = new pg.Client({ connectionString: testDatabaseUrl! });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${dbName}`);
        created = true;
      } finally {
        await admin.end();
      }
    });
    after(async () => {
      await Promise.allSettled(
        services.map((s) =>
          s.child.exitCode === null && s.child.signalCode === null ? s.stop() : undefined,
        ),
      );
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (created) {
        const admin = new pg.Client({ connectionString: testDatabaseUrl! });
        await admin.connect();
        try {
          await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
        } finally {
          await admin.end();
        }
      }
      for (const d of dataDirs) fs.rmSync(d, { recursive: true, force: true });
    });

    test("kill -9 of a process mid-delivery loses no event; duplicates carry the same X-Event-ID", {
      timeout: 300_000,
    }, async () => {
      const url = new URL(testDatabaseUrl!);
      url.pathname = `/${dbName}`;
      const common = {
        DATABASE_URL: url.toString(),
        ADMIN_TOKEN: adminToken,
        PORT: "0",
        PRICE_FEED: "manual",
        LOG_LEVEL: "warn",
        WEBHOOK_ALLOW_PRIVATE: "true",
        WEBHOOK_ALLOW_HTTP: "true",
        WEBHOOK_SIGNING_KEY: generateKeyPair().privateKeyPem,
      };
      for (const adminPort of ["0", "off", "off"]) {
        const dataDir = tempDataDir();
        dataDirs.push(dataDir);
        services.push(await startService({ ...common, ADMIN_PORT: adminPort, DATA_DIR: dataDir }));
      }
      const keys = generateKeyPair();
      const made = await fetch(`${services[0]!.adminUrl}/admin/partners`, {
        method: "POST",
        headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({
          name: "Hooks",
          public_key_pem: keys.publicKeyPem,
          allowed_ips: ["127.0.0.1/32"],
        }),
        signal: AbortSignal.timeout(30_000),
      });
      assert.equal(made.status, 201);
      const partnerId = ((await made.json()) as { result: { id: string } }).result.id;
      const call = async (via: number, method: "GET" | "POST", target: string, body?: unknown) => {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const headers: Record<string, string> = {
          ...signRequest({
            partnerId,
            privateKey: keys.privateKeyPem,
            method,
            target,
            body: payload ?? "",
            nowMs: Date.now(),
          }),
          ...(payload === undefined ? {} : { "content-type": "application/json" }),
        };
        const res = await fetch(`${services[via]!.partnerUrl}${target}`, {
          method,
          headers,
          ...(payload === undefined ? {} : { body: payload }),
          signal: AbortSignal.timeout(30_000),
        });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };

      assert.equal((await call(0, "POST", "/v1/partner/clients", clientPayload(1))).status, 201);
      // The endpoint starts where the feed stands; client.created is behind it once the feed serves
      // it (an event the feed still holds back when an endpoint is made is delivered to it too).
      await feedSettledAt(url.toString());
      const port = (server.address() as AddressInfo).port;
      const ep = await call(0, "POST", "/v1/partner/webhook-endpoints", {
        url: `http://127.0.0.1:${port}/hooks`,
      });
      assert.equal(ep.status, 201, JSON.stringify(ep.body));
      const endpointId = (ep.body.result as { id: string }).id;

      const deposits = 60;
      for (let i = 0; i < deposits; i++) {
        const r = await call(i % 3, "POST", "/v1/partner/deposits", {
          partner_client_id: "client-1",
          asset_id: "AED",
          amount: "1",
          partner_order_ref: `f-${i}`,
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
      }
      // Kill the second process while deliveries are in flight (bounded wait for some to be).
      const until = Date.now() + 60_000;
      while (inFlight === 0 && Date.now() < until) await delay(10);
      assert.ok(inFlight > 0, "no delivery was in flight");
      services[1]!.child.kill("SIGKILL");

      // The feed, read through a surviving process once it serves every committed event (another
      // test file's open transaction can hold the last ones back: testing/events.ts).
      await feedSettledAt(url.toString());
      const feed: { id: string }[] = [];
      let cursor: string | null = null;
      for (;;) {
        const page = await call(
          0,
          "GET",
          `/v1/partner/events?limit=100${cursor === null ? "" : `&after=${cursor}`}`,
        );
        assert.equal(page.status, 200);
        feed.push(...(page.body.items as { id: string }[]));
        cursor = page.body.next_cursor as string | null;
        if (!page.body.has_more) break;
      }
      // client.created came before the endpoint; the 60 orders after it.
      const expected = feed.slice(1).map((e) => e.id);
      assert.equal(expected.length, deposits);
      // Every event reaches the receiver (bounded: a dead worker's claims return after their lease).
      const deadline = Date.now() + 180_000;
      while (expected.some((id) => !received.has(id)) && Date.now() < deadline) await delay(50);
      const missing = expected.filter((id) => !received.has(id));
      assert.deepEqual(missing, []);
      // Duplicates, if any, are the same event: same id, same bytes.
      for (const [id, bodies] of received) {
        assert.equal(new Set(bodies).size, 1, `different bodies for ${id}`);
        assert.equal((JSON.parse(bodies[0]!) as { id: string }).id, id);
      }
      assert.deepEqual(
        [...received.keys()].sort(),
        [...expected].sort(),
        "only the feed's events were delivered",
      );
      // The delivery log agrees: one delivery per event, all delivered in the end.
      const log = await call(2, "GET", `/v1/partner/webhook-endpoints/${endpointId}/deliveries?limit=100`);
      const items = log.body.items as { event_id: string; status: string }[];
      assert.deepEqual(items.map((d) => d.event_id).sort(), [...expected].sort());
      const untilDelivered = Date.now() + 60_000;
      let statuses = items.map((d) => d.status);
      while (statuses.some((s) => s !== "delivered") && Date.now() < untilDelivered) {
        await delay(100);
        statuses = (
          (await call(2, "GET", `/v1/partner/webhook-endpoints/${endpointId}/deliveries?limit=100`)).body
            .items as { status: string }[]
        ).map((d) => d.status);
      }
      assert.ok(
        statuses.every((s) => s === "delivered"),
        JSON.stringify(statuses),
      );
    });
  });
}
