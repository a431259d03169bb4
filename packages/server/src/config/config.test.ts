// Configuration is validated at start, one clear line per bad value (README.md "Configuration").

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
  assert.deepEqual(c.fileStore, { kind: "local" });
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

test("TRUST_PROXY takes addresses and ranges in plain decimal or IPv6 only", () => {
  for (const odd of [
    "127.1",
    "0177.0.0.1",
    "10.0.0.010",
    "0x0a000001",
    "10.0.0.0/08",
    "fe80::1%eth0",
    "::1/129",
  ]) {
    assert.throws(
      () => loadConfig({ TRUST_PROXY: `10.0.0.1, ${odd}` }),
      (err: unknown) => err instanceof ConfigError && err.problems.some((p) => p.includes(`"${odd}"`)),
      odd,
    );
  }
  const c = loadConfig({ TRUST_PROXY: "0.0.0.0/0, 192.168.1.10, ::ffff:10.0.0.1, 2001:DB8::/32, ::/0" });
  assert.deepEqual(c.trustProxy, ["0.0.0.0/0", "192.168.1.10", "::ffff:10.0.0.1", "2001:DB8::/32", "::/0"]);
});

test("FILE_STORE=s3 takes its bucket, region, endpoint and addressing style", () => {
  const c = loadConfig({
    FILE_STORE: "s3",
    S3_BUCKET: "kyc-documents.eu",
    S3_REGION: "eu-west-1",
    S3_ENDPOINT: "https://objects.internal:9000",
    S3_FORCE_PATH_STYLE: "true",
  });
  assert.deepEqual(c.fileStore, {
    kind: "s3",
    bucket: "kyc-documents.eu",
    region: "eu-west-1",
    endpoint: "https://objects.internal:9000",
    forcePathStyle: true,
  });
  // The region may come from the SDK's own variable; AWS's endpoint and host-style addressing by default.
  assert.deepEqual(loadConfig({ FILE_STORE: "s3", S3_BUCKET: "kyc", AWS_REGION: "me-central-1" }).fileStore, {
    kind: "s3",
    bucket: "kyc",
    region: "me-central-1",
    endpoint: null,
    forcePathStyle: false,
  });
});

test("a bad or incomplete file store setting is one line per variable, and none reveals a secret", () => {
  const problems = (env: Record<string, string>): string[] => {
    try {
      loadConfig(env);
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      for (const p of err.problems) assert.doesNotMatch(p, /\n|hunter2/);
      return err.problems.map((p) => p.split(":")[0]!);
    }
    return assert.fail("expected a ConfigError");
  };
  assert.deepEqual(problems({ FILE_STORE: "gcs" }), ["FILE_STORE"]);
  assert.deepEqual(problems({ FILE_STORE: "s3" }), ["S3_BUCKET", "S3_REGION"]);
  assert.deepEqual(
    problems({
      FILE_STORE: "s3",
      S3_BUCKET: "Has_Upper",
      S3_REGION: "eu west",
      S3_ENDPOINT: "https://key:hunter2@objects.internal",
      S3_FORCE_PATH_STYLE: "yes",
    }),
    ["S3_BUCKET", "S3_REGION", "S3_ENDPOINT", "S3_FORCE_PATH_STYLE"],
  );
  for (const endpoint of ["ftp://objects.internal", "objects.internal:9000", "https://o.internal/?x=1"]) {
    assert.deepEqual(
      problems({ FILE_STORE: "s3", S3_BUCKET: "kyc", S3_REGION: "x", S3_ENDPOINT: endpoint }),
      ["S3_ENDPOINT"],
    );
  }
  for (const bucket of ["ab", "a".repeat(64), "-kyc", "kyc-", "k..yc", "kyc/docs"]) {
    assert.deepEqual(
      problems({ FILE_STORE: "s3", S3_BUCKET: bucket, S3_REGION: "x" }),
      ["S3_BUCKET"],
      bucket,
    );
  }
  // An S3 setting without FILE_STORE=s3 would keep the files on the local disk unnoticed.
  assert.deepEqual(problems({ S3_BUCKET: "kyc", S3_ENDPOINT: "http://127.0.0.1:9000" }), [
    "S3_BUCKET",
    "S3_ENDPOINT",
  ]);
});

test("REDIS_URL, REDIS_TIMEOUT_MS and RATE_LIMITS: defaults, valid values, one line per bad one", () => {
  const plain = loadConfig({}, "/srv/app");
  assert.equal(plain.redisUrl, null);
  assert.equal(plain.redisTimeoutMs, 250);
  assert.equal(plain.rateLimits, true);
  const set = loadConfig(
    { REDIS_URL: "redis://10.0.0.5:6379/2", REDIS_TIMEOUT_MS: "100", RATE_LIMITS: "off" },
    "/srv/app",
  );
  assert.equal(set.redisUrl, "redis://10.0.0.5:6379/2");
  assert.equal(set.redisTimeoutMs, 100);
  assert.equal(set.rateLimits, false);
  assert.throws(
    () => loadConfig({ REDIS_URL: "http://x", REDIS_TIMEOUT_MS: "5", RATE_LIMITS: "yes" }, "/srv/app"),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.deepEqual(err.problems, [
        "REDIS_URL: expected a redis:// or rediss:// URL",
        'RATE_LIMITS: expected on or off, got "yes"',
        'REDIS_TIMEOUT_MS: expected an integer from 10 to 10000, got "5"',
      ]);
      return true;
    },
  );
});

test("SIGNATURE_VERIFIER: auto by default, each library by name, anything else refused", () => {
  assert.equal(loadConfig({}, "/srv/app").signatureVerifier, "auto");
  for (const choice of ["auto", "libsodium", "node"] as const) {
    assert.equal(loadConfig({ SIGNATURE_VERIFIER: choice }, "/srv/app").signatureVerifier, choice);
  }
  assert.throws(
    () => loadConfig({ SIGNATURE_VERIFIER: "openssl" }, "/srv/app"),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.deepEqual(err.problems, ['SIGNATURE_VERIFIER: expected auto, libsodium or node, got "openssl"']);
      return true;
    },
  );
});

test("CONNECTIONS_PER_ADDRESS_MAX and CONNECTIONS_MAX: defaults, valid values, one line per bad one", () => {
  const plain = loadConfig({}, "/srv/app");
  assert.equal(plain.connectionsPerAddressMax, 1_000);
  assert.equal(plain.connectionsMax, 10_000);
  const set = loadConfig({ CONNECTIONS_PER_ADDRESS_MAX: "50", CONNECTIONS_MAX: "4000" }, "/srv/app");
  assert.equal(set.connectionsPerAddressMax, 50);
  assert.equal(set.connectionsMax, 4_000);
  assert.throws(
    () => loadConfig({ CONNECTIONS_PER_ADDRESS_MAX: "0", CONNECTIONS_MAX: "lots" }, "/srv/app"),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.deepEqual(err.problems, [
        'CONNECTIONS_PER_ADDRESS_MAX: expected an integer from 1 to 1000000, got "0"',
        'CONNECTIONS_MAX: expected an integer from 1 to 1000000, got "lots"',
      ]);
      return true;
    },
  );
});
