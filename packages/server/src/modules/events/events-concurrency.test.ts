// The feed's order under concurrent writers (docs/reference.md, "Events"): a consumer that follows
// the feed while several API processes commit orders at once reads every event exactly once, in
// the order a fresh read from the start shows afterwards; nothing is ever inserted before what was
// already read.
//
// On PostgreSQL (`npm run test:pg`) the writes and the reads alternate between two `counterpart
// serve` processes sharing one fresh database. On PGlite (`npm test`) they run in-process, and
// the same assertions must hold.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { feedSettled } from "../../testing/events.ts";
import { insertClient } from "../../testing/fixtures.ts";
import { onPostgres } from "../../testing/harness.ts";
import {
  type ApiResponse,
  type SignedApi,
  startInProcessApi,
  startTwoProcessApi,
} from "../../testing/signed-api.ts";

interface Ev {
  id: string;
  type: string;
  partner_client_id: string;
  data: { id: number; partner_order_ref: string | null };
}
interface Feed {
  items: Ev[];
  next_cursor: string | null;
  has_more: boolean;
}

const timeout = 120_000;

describe(`event feed under concurrency (${onPostgres ? "two API processes on PostgreSQL" : "in-process"})`, () => {
  let api: SignedApi;
  before(async () => {
    api = onPostgres ? await startTwoProcessApi() : await startInProcessApi();
  });
  after(async () => {
    if (api !== undefined) await api.close();
  });

  const read = async (cursor: string | null, via: number): Promise<Feed> => {
    const res = await api.call({
      method: "GET",
      url: `/v1/partner/events?limit=100${cursor === null ? "" : `&after=${cursor}`}`,
      via,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body as Feed;
  };

  test("a follower reading while orders commit on every process reads each event once, in the final order", {
    timeout,
  }, async () => {
    const clients = 6;
    for (let n = 1; n <= clients; n++) await insertClient(api.db, api.partnerId, n);
    const lanes = 8;
    const perLane = onPostgres ? 25 : 8;
    let writing = true;
    const followed: Ev[] = [];
    let cursor: string | null = null;
    let reads = 0;
    const follower = (async () => {
      // Reads as fast as it can, alternating processes, until the writers are done and it has
      // caught up with everything committed.
      for (;;) {
        const done = !writing;
        if (done) await feedSettled(api.db);
        const page = await read(cursor, reads++);
        followed.push(...page.items);
        cursor = page.next_cursor;
        if (done && !page.has_more) return;
        // In-process, a read may finish without a turn of the event loop: let the writers in.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    })();
    const responses: ApiResponse[] = [];
    try {
      await Promise.all(
        Array.from({ length: lanes }, async (_, lane) => {
          for (let i = 0; i < perLane; i++) {
            const res = await api.call({
              method: "POST",
              url: "/v1/partner/deposits",
              body: {
                partner_client_id: `client-${((lane + i) % clients) + 1}`,
                asset_id: "AED",
                amount: "1",
                partner_order_ref: `c-${lane}-${i}`,
              },
              via: lane + i,
            });
            responses.push(res);
          }
        }),
      );
    } finally {
      writing = false;
    }
    await follower;

    const ok = responses.filter((r) => r.status === 200);
    assert.equal(ok.length, lanes * perLane, JSON.stringify(responses.find((r) => r.status !== 200)?.body));
    // A fresh read from the start shows exactly what the follower read, in the same order.
    await feedSettled(api.db);
    const fresh: Ev[] = [];
    let c: string | null = null;
    for (;;) {
      const page = await read(c, 1);
      fresh.push(...page.items);
      c = page.next_cursor;
      if (!page.has_more) break;
    }
    assert.deepEqual(
      followed.map((e) => e.id),
      fresh.map((e) => e.id),
    );
    assert.equal(new Set(fresh.map((e) => e.id)).size, fresh.length, "no event twice");
    // One order.completed per deposit, for the very order the response returned.
    const orderIds = ok.map((r) => (r.body as { result: { id: number } }).result.id).sort((a, b) => a - b);
    const eventOrders = fresh
      .filter((e) => e.type === "order.completed")
      .map((e) => e.data.id)
      .sort((a, b) => a - b);
    assert.deepEqual(eventOrders, orderIds);
    assert.ok(reads > 1);
  });
});
