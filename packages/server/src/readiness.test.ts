// GET /readyz (docs/operations.md, "Health, logs, metrics"): 200 while the process can serve, 503
// once it is stopping (before its listener closes, so a load balancer that polls it stops sending
// first), and in both the background jobs the process competes for and whether it leads each.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { buildPartnerApp } from "./app.ts";
import { startTestContext, type TestContext } from "./testing/harness.ts";

describe("readiness", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await startTestContext();
  });
  after(async () => {
    await ctx.close();
  });

  function appWith(stopping: boolean) {
    return buildPartnerApp(ctx.services, {
      logger: false,
      readiness: {
        stopping: () => stopping,
        backgroundJobs: () => [
          { job: "housekeeping", leader: true },
          { job: "price feed", leader: false },
        ],
      },
    });
  }

  test("200 while the process can serve, with the jobs it leads", async () => {
    const app = appWith(false);
    try {
      const res = await app.inject({ method: "GET", url: "/readyz" });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(res.json(), {
        status: "ready",
        background_jobs: [
          { job: "housekeeping", leader: true },
          { job: "price feed", leader: false },
        ],
      });
    } finally {
      await app.close();
    }
  });

  test("503 stopping once the process stops", async () => {
    const app = appWith(true);
    try {
      const res = await app.inject({ method: "GET", url: "/readyz" });
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().status, "stopping");
      assert.equal(res.json().background_jobs.length, 2);
    } finally {
      await app.close();
    }
  });

  test("a process with no background job (a test app, a worker of WORKERS=N) lists none", async () => {
    const res = await ctx.app.inject({ method: "GET", url: "/readyz" });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { status: "ready", background_jobs: [] });
  });
});
