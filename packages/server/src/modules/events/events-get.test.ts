// GET /v1/partner/events/{id} (docs/reference.md §6.2): one of the partner's events, exactly as the
// feed shows it; 404 for another partner's event, an id that names nothing, and text that is not
// an event id, and nothing changes.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { feedSettled } from "../../testing/events.ts";
import { clientPayload } from "../../testing/fixtures.ts";
import { startTestContext, type TestContext } from "../../testing/harness.ts";
import { eventId } from "./event-views.ts";

describe("one event by its id", () => {
  let ctx: TestContext;
  let dataDir: string;
  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cp-events-get-"));
    ctx = await startTestContext({ env: { DATA_DIR: dataDir } });
  });
  after(async () => {
    await ctx.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test("the partner's own event as the feed shows it; anyone else's, or none, is a 404", async () => {
    const c = await ctx.signed({ method: "POST", url: "/v1/partner/clients", body: clientPayload(1) });
    assert.equal(c.statusCode, 201, c.body);
    const d = await ctx.signed({
      method: "POST",
      url: "/v1/partner/deposits",
      body: { partner_client_id: "client-1", asset_id: "AED", amount: "5", partner_order_ref: "get-1" },
    });
    assert.equal(d.statusCode, 200, d.body);
    await feedSettled(ctx.services.database.db);
    const feed = await ctx.signed({ method: "GET", url: "/v1/partner/events" });
    assert.equal(feed.statusCode, 200, feed.body);
    const items = feed.json().items as { id: string; type: string }[];
    assert.deepEqual(
      items.map((e) => e.type),
      ["client.created", "order.completed"],
    );
    for (const e of items) {
      const one = await ctx.signed({ method: "GET", url: `/v1/partner/events/${e.id}` });
      assert.equal(one.statusCode, 200, one.body);
      assert.deepEqual(one.json(), { result: e });
    }

    const other = await ctx.addPartner();
    const count = async () =>
      Number(
        (
          await ctx.services.database.db
            .selectFrom("events")
            .select((eb) => eb.fn.countAll().as("n"))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await count();
    const unknown = eventId({ txid: 1n, seq: 999_999n });
    for (const [who, id] of [
      [other, items[1]!.id],
      [ctx.partner, unknown],
      [ctx.partner, "evt_not-an-event-id"],
      [ctx.partner, "42"],
      // Positions past PostgreSQL's bigint (the fuzz test found a 500 here): none, a 404.
      [ctx.partner, "evt_aaaaaaablnaaaaaaaaaafg"],
      [ctx.partner, eventId({ txid: 2n ** 63n, seq: 1n })],
    ] as const) {
      const res = await ctx.signed({ method: "GET", url: `/v1/partner/events/${id}`, partner: who });
      assert.equal(res.statusCode, 404, `${id}: ${res.body}`);
      assert.equal(res.json().code, 404);
    }
    assert.equal(await count(), before);
  });
});
