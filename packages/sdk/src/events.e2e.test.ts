// The SDK's events and webhooks against a running sandbox (docs/reference.md §6): a webhook
// endpoint registered through the SDK receives a deposit's event, Webhooks.verify accepts it with
// the published key and refuses a changed body, events.list() reads the feed and resumes from a
// cursor, and events.get() (and `counterpart events get`) reads one event by its id.

import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { runCli } from "../../cli/src/testing.ts";
import { clientPayload } from "../../server/src/testing/fixtures.ts";
import { type ServiceProcess, startService, tempDataDir } from "../../server/src/testing/processes.ts";
import {
  type ClientCreateRequest,
  Counterpart,
  type Event,
  NotFoundError,
  sandboxOptions,
  Webhooks,
} from "./index.ts";

describe("SDK: events and webhooks against a running sandbox", () => {
  const dataDir = tempDataDir();
  let svc: ServiceProcess | undefined;
  let server: http.Server;
  const hits: { path: string; headers: http.IncomingHttpHeaders; body: Buffer }[] = [];
  before(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        hits.push({ path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks) });
        res.end("ok");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    svc = await startService({
      DATA_DIR: dataDir,
      PORT: "0",
      ADMIN_PORT: "0",
      PRICE_FEED: "manual",
      LOG_LEVEL: "warn",
    });
  });
  after(async () => {
    await svc?.stop();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test("a delivery verifies with the published key; the feed iterates and resumes", {
    timeout: 120_000,
  }, async () => {
    const counterpart = new Counterpart(sandboxOptions(dataDir));
    const port = (server.address() as AddressInfo).port;
    const endpoint = await counterpart.webhooks.create({
      url: `http://127.0.0.1:${port}/hooks?app=1`,
      event_types: ["order.completed"],
    });
    assert.equal(endpoint.status, "enabled");
    await counterpart.clients.create(clientPayload(1) as unknown as ClientCreateRequest);
    const order = await counterpart.deposits.create({
      partner_client_id: "client-1",
      asset_id: "AED",
      amount: "25",
      partner_order_ref: "sdk-hook-1",
    });
    // The service's worker delivers on its own (bounded wait).
    const until = Date.now() + 60_000;
    while (hits.length === 0 && Date.now() < until) await delay(20);
    assert.equal(hits.length, 1);
    const hit = hits[0]!;
    const keys = await counterpart.webhooks.publicKeys();
    const verified = Webhooks.verify(hit.body, hit.headers, keys, { path: hit.path });
    assert.deepEqual(verified, { ok: true, eventId: hit.headers["x-event-id"] });
    assert.equal(
      counterpart.webhooks.verify(Buffer.concat([hit.body, Buffer.from(" ")]), hit.headers, keys, {
        path: hit.path,
      }).ok,
      false,
    );
    assert.equal(
      Webhooks.verify(hit.body, hit.headers, keys, { path: hit.path, nowMs: Date.now() + 600_000 }).ok,
      false,
    );
    assert.equal(Webhooks.verify(hit.body, hit.headers, [], { path: hit.path }).ok, false);
    const delivered = JSON.parse(hit.body.toString("utf8")) as Event;
    assert.equal(delivered.type, "order.completed");
    assert.equal((delivered.data as { id: number }).id, order.order.id);

    // The feed: client.created, then the order; resuming after the first gives the second.
    const all: Event[] = [];
    for await (const e of counterpart.events.list({ limit: 1 })) all.push(e);
    assert.deepEqual(
      all.map((e) => e.type),
      ["client.created", "order.completed"],
    );
    assert.equal(all[1]!.id, delivered.id);
    const rest: Event[] = [];
    for await (const e of counterpart.events.list({ after: all[0]!.id })) rest.push(e);
    assert.deepEqual(rest, [all[1]]);
    // The CLI's tail prints the same events as JSON lines, and resumes after a given id.
    const tail = await runCli(["events", "tail"], { PATH: process.env.PATH, DATA_DIR: dataDir });
    assert.equal(tail.code, 0, tail.stderr);
    assert.deepEqual(
      tail.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).id),
      all.map((e) => e.id),
    );
    const resumed = await runCli(["events", "tail", "--after", all[0]!.id, "--type", "order.completed"], {
      PATH: process.env.PATH,
      DATA_DIR: dataDir,
    });
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.deepEqual(JSON.parse(resumed.stdout), all[1]);
    // One event by its id: the SDK's events.get() and `counterpart events get`; an unknown id is NotFoundError (404).
    assert.deepEqual({ ...(await counterpart.events.get(delivered.id)) }, delivered);
    await assert.rejects(counterpart.events.get("evt_AAAAAAAAAAAAAAAAAAAAAA"), (err: unknown) => {
      assert.ok(err instanceof NotFoundError);
      return true;
    });
    const one = await runCli(["events", "get", all[0]!.id, "--json"], {
      PATH: process.env.PATH,
      DATA_DIR: dataDir,
    });
    assert.equal(one.code, 0, one.stderr);
    assert.deepEqual(JSON.parse(one.stdout), all[0]);
    const none = await runCli(["events", "get", "evt_nope"], { PATH: process.env.PATH, DATA_DIR: dataDir });
    assert.equal(none.code, 2, none.stderr);
    assert.match(none.stderr, /Not Found/);
    const log = await counterpart.webhooks.deliveries(endpoint.id);
    assert.equal(log[0]!.status, "delivered");
    // The log pages back: the newest `limit`, then those before the last one's id.
    const newest = await counterpart.webhooks.deliveries(endpoint.id, { limit: 1 });
    assert.deepEqual(
      newest.map((d) => d.id),
      [log[0]!.id],
    );
    const older = await counterpart.webhooks.deliveries(endpoint.id, { before: log[0]!.id });
    assert.deepEqual(
      older.map((d) => d.id),
      log.slice(1).map((d) => d.id),
    );
    assert.deepEqual(
      { ...(await counterpart.webhooks.get(endpoint.id)) },
      { ...endpoint, status: "enabled" },
    );
    await counterpart.webhooks.delete(endpoint.id);
    assert.deepEqual([...(await counterpart.webhooks.list())], []);
  });
});
