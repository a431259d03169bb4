// Configuration is validated at start, one clear line per bad value (DESIGN "Running").

import assert from "node:assert/strict";
import path from "node:path";
import { test } from "node:test";
import { ConfigError, loadConfig } from "./config.ts";

test("no configuration gives the documented defaults", () => {
  const c = loadConfig({}, "/srv/app");
  assert.equal(c.port, 8080);
  assert.equal(c.host, "127.0.0.1");
  assert.equal(c.adminPort, 8081);
  assert.equal(c.adminToken, null);
  assert.equal(c.dataDir, path.resolve("/srv/app", ".data"));
  assert.equal(c.databaseUrl, null);
  assert.equal(c.workers, 1);
  assert.equal(c.databasePoolSize, 10);
  assert.equal(c.logLevel, "info");
  assert.deepEqual(c.trustProxy, []);
  assert.equal(c.priceFeed, "simulated");
  assert.equal(c.priceStaleAfterSeconds, 60);
  assert.equal(c.quoteLifetimeSeconds, 15);
  assert.equal(c.legalAgeYears, 18);
  assert.ok(Object.isFrozen(c));
});

test("every bad value is reported on its own line, all at once", () => {
  const env = {
    PORT: "80a",
    ADMIN_PORT: "70000",
    HOST: "example.com",
    ADMIN_TOKEN: "short",
    DATABASE_URL: "mysql://x",
    WORKERS: "0",
    LOG_LEVEL: "loud",
    TRUST_PROXY: "10.0.0.0/8, nope",
    FILE_URL_SECRET: "tiny",
    PRICE_FEED: "random",
    PRICE_STALE_AFTER_S: "-1",
    QUOTE_LIFETIME_S: "1.5",
    LEGAL_AGE: "x",
    DATABASE_POOL_SIZE: "0",
  };
  try {
    loadConfig(env);
    assert.fail("expected a ConfigError");
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    const names = err.problems.map((p) => p.split(":")[0]);
    assert.deepEqual(names.sort(), Object.keys(env).sort());
    for (const p of err.problems) assert.doesNotMatch(p, /\n/);
  }
});

test("WORKERS above 1 needs PostgreSQL; ADMIN_PORT=off runs no admin listener", () => {
  assert.throws(
    () => loadConfig({ WORKERS: "2" }),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.problems[0]!, /^WORKERS: .*PostgreSQL/);
      return true;
    },
  );
  const c = loadConfig({
    WORKERS: "3",
    DATABASE_URL: "postgres://u@h/db",
    ADMIN_PORT: "off",
    TRUST_PROXY: "10.0.0.1,::1",
  });
  assert.equal(c.workers, 3);
  assert.equal(c.adminPort, null);
  assert.deepEqual(c.trustProxy, ["10.0.0.1", "::1"]);
});
