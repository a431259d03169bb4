// Environment → frozen, validated configuration. Every bad value is reported on its own line so an
// operator fixes them all in one go; nothing else in the service reads process.env.

import crypto from "node:crypto";
import path from "node:path";
import ipaddr from "ipaddr.js";
import type { VerifierChoice } from "../platform/signature-verifier.ts";
import { limits } from "./limits.ts";

export type PriceFeedKind = "simulated" | "manual";
export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";

/**
 * Where document files are kept (docs/operations.md, "Document storage"): the data folder, or an
 * S3-compatible bucket. Credentials for S3 are not configuration: the AWS SDK's default provider
 * chain finds them (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, a web identity token,
 * the container or instance role).
 */
export type FileStoreConfig =
  | { readonly kind: "local" }
  | {
      readonly kind: "s3";
      readonly bucket: string;
      readonly region: string;
      /** null: the AWS endpoint of the region. */
      readonly endpoint: string | null;
      /** Bucket in the path (`endpoint/bucket/key`) instead of the host name; most S3-compatible servers need it. */
      readonly forcePathStyle: boolean;
    };

export interface Config {
  readonly port: number;
  readonly host: string;
  /** null: this process runs no admin listener (extra API processes started separately). */
  readonly adminPort: number | null;
  readonly adminToken: string | null;
  readonly dataDir: string;
  readonly databaseUrl: string | null;
  readonly workers: number;
  /** PostgreSQL connections per process. */
  readonly databasePoolSize: number;
  readonly logLevel: LogLevel;
  /** CIDR ranges of proxies whose X-Forwarded-For is believed. Empty: none. */
  readonly trustProxy: readonly string[];
  readonly fileUrlSecret: string | null;
  readonly fileStore: FileStoreConfig;
  readonly priceFeed: PriceFeedKind;
  readonly priceStaleAfterSeconds: number;
  readonly quoteLifetimeSeconds: number;
  readonly legalAgeYears: number;
  /** How long events are kept (docs/reference.md, "Events"); at least 30 days. */
  readonly eventRetentionDays: number;
  /** Webhooks may go to private, loopback and link-local addresses (WEBHOOK_ALLOW_PRIVATE=true). */
  readonly webhookAllowPrivate: boolean;
  /** Webhooks may go to plain http URLs outside the sandbox (WEBHOOK_ALLOW_HTTP=true). */
  readonly webhookAllowHttp: boolean;
  /** The service's Ed25519 key for signing webhooks (PEM), or null: one kept in the data folder. */
  readonly webhookSigningKey: string | null;
  /** The origin document links in webhook payloads point at (PUBLIC_URL). */
  readonly publicUrl: string;
  /** Where the replay guard and the rate-limit counters live; null: the database and this process. */
  readonly redisUrl: string | null;
  /** How long one Redis call is waited for before it counts as failed (REDIS_TIMEOUT_MS). */
  readonly redisTimeoutMs: number;
  /** Whether signed requests are rate limited per partner (RATE_LIMITS=on, the default). */
  readonly rateLimits: boolean;
  /** Connections open at once per client address, TRUST_PROXY's proxies excepted (CONNECTIONS_PER_ADDRESS_MAX). */
  readonly connectionsPerAddressMax: number;
  /** Connections open at once per listener (CONNECTIONS_MAX). */
  readonly connectionsMax: number;
  /** Request body bytes the process holds at once; past them a body is a 503 (BODY_BYTES_IN_FLIGHT_MAX). */
  readonly bodyBytesInFlightMax: number;
  /**
   * Which library verifies the partners' signatures (SIGNATURE_VERIFIER): auto (libsodium when its
   * add-on loads, else node:crypto), libsodium (or the process does not start), node.
   */
  readonly signatureVerifier: VerifierChoice;
}

export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(problems: string[]) {
    super(problems.join("\n"));
    this.name = "ConfigError";
    this.problems = problems;
  }
}

const logLevels: readonly LogLevel[] = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

export function loadConfig(env: Record<string, string | undefined>, cwd: string = process.cwd()): Config {
  const problems: string[] = [];

  function integer(name: string, fallback: number, min: number, max: number): number {
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    if (!/^[0-9]+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      problems.push(`${name}: expected an integer from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return Number(raw);
  }

  function flag(name: string): boolean {
    const raw = env[name];
    if (raw === undefined || raw === "" || raw === "false" || raw === "0") return false;
    if (raw === "true" || raw === "1") return true;
    problems.push(`${name}: expected true or false, got "${raw}"`);
    return false;
  }

  function signingKey(): string | null {
    const raw = env.WEBHOOK_SIGNING_KEY;
    if (raw === undefined || raw === "") return null;
    try {
      const key = crypto.createPrivateKey(raw);
      if (key.asymmetricKeyType === "ed25519") return raw;
    } catch {}
    problems.push("WEBHOOK_SIGNING_KEY: expected an Ed25519 private key in PEM");
    return null;
  }

  function publicUrl(): string {
    const raw = env.PUBLIC_URL;
    if (raw === undefined || raw === "") return `http://localhost:${port}`;
    try {
      const u = new URL(raw);
      if ((u.protocol === "http:" || u.protocol === "https:") && u.pathname === "/" && u.search === "")
        return u.origin;
    } catch {}
    problems.push(`PUBLIC_URL: expected an http(s) origin such as https://api.example.com, got "${raw}"`);
    return `http://localhost:${port}`;
  }

  const port = integer("PORT", 8080, 0, 65535);
  let adminPort: number | null = 8081;
  if (env.ADMIN_PORT === "off") adminPort = null;
  else adminPort = integer("ADMIN_PORT", 8081, 0, 65535);

  const host = env.HOST || "127.0.0.1";
  if (!ipaddr.isValid(host) && host !== "localhost") {
    problems.push(`HOST: expected an IP address to listen on, got "${host}"`);
  }

  const adminToken = env.ADMIN_TOKEN || null;
  if (adminToken !== null && adminToken.length < 16) {
    problems.push("ADMIN_TOKEN: must be at least 16 characters");
  }

  const databaseUrl = env.DATABASE_URL || null;
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push("DATABASE_URL: expected a postgres:// or postgresql:// URL");
  }

  const workers = integer("WORKERS", 1, 1, 64);
  if (workers > 1 && databaseUrl === null) {
    problems.push(
      "WORKERS: more than one process needs PostgreSQL (set DATABASE_URL); PGlite serves one process",
    );
  }

  const logLevel = (env.LOG_LEVEL || "info") as LogLevel;
  if (!logLevels.includes(logLevel)) {
    problems.push(`LOG_LEVEL: expected one of ${logLevels.join(", ")}, got "${env.LOG_LEVEL}"`);
  }

  const trustProxy: string[] = [];
  const rawProxy = env.TRUST_PROXY ?? "none";
  if (rawProxy !== "" && rawProxy !== "none") {
    for (const piece of rawProxy.split(",").map((s) => s.trim())) {
      if (!isCidrOrIp(piece)) problems.push(`TRUST_PROXY: "${piece}" is not an IP address or CIDR range`);
      else trustProxy.push(piece);
    }
  }

  const fileUrlSecret = env.FILE_URL_SECRET || null;
  if (fileUrlSecret !== null && fileUrlSecret.length < 32) {
    problems.push("FILE_URL_SECRET: must be at least 32 characters");
  }

  const fileStore = fileStoreConfig(env, problems);

  const priceFeed = (env.PRICE_FEED || "simulated") as PriceFeedKind;
  if (priceFeed !== "simulated" && priceFeed !== "manual") {
    problems.push(`PRICE_FEED: expected simulated or manual, got "${env.PRICE_FEED}"`);
  }

  const redisUrl = env.REDIS_URL || null;
  if (redisUrl !== null && !/^rediss?:\/\/[^\s]+$/.test(redisUrl)) {
    problems.push("REDIS_URL: expected a redis:// or rediss:// URL");
  }

  const rawRateLimits = env.RATE_LIMITS || "on";
  if (rawRateLimits !== "on" && rawRateLimits !== "off") {
    problems.push(`RATE_LIMITS: expected on or off, got "${rawRateLimits}"`);
  }

  const signatureVerifier = (env.SIGNATURE_VERIFIER || "auto") as VerifierChoice;
  if (signatureVerifier !== "auto" && signatureVerifier !== "libsodium" && signatureVerifier !== "node") {
    problems.push(`SIGNATURE_VERIFIER: expected auto, libsodium or node, got "${env.SIGNATURE_VERIFIER}"`);
  }

  const config: Config = {
    port,
    host,
    adminPort,
    adminToken,
    dataDir: path.resolve(cwd, env.DATA_DIR || ".data"),
    databaseUrl,
    workers,
    databasePoolSize: integer("DATABASE_POOL_SIZE", 10, 1, 200),
    logLevel,
    trustProxy,
    fileUrlSecret,
    fileStore,
    priceFeed,
    priceStaleAfterSeconds: integer("PRICE_STALE_AFTER_S", 60, 1, 86_400),
    quoteLifetimeSeconds: integer("QUOTE_LIFETIME_S", 15, 1, 3_600),
    legalAgeYears: integer("LEGAL_AGE", 18, 0, 150),
    eventRetentionDays: integer("EVENT_RETENTION_DAYS", 30, 30, 3_650),
    connectionsPerAddressMax: integer(
      "CONNECTIONS_PER_ADDRESS_MAX",
      limits.connectionsPerAddressMax,
      1,
      1_000_000,
    ),
    connectionsMax: integer("CONNECTIONS_MAX", limits.connectionsMax, 1, 1_000_000),
    bodyBytesInFlightMax: integer(
      "BODY_BYTES_IN_FLIGHT_MAX",
      limits.bodyBytesInFlightMax,
      limits.multipartBodyBytesMax,
      1024 ** 4,
    ),
    webhookAllowPrivate: flag("WEBHOOK_ALLOW_PRIVATE"),
    webhookAllowHttp: flag("WEBHOOK_ALLOW_HTTP"),
    webhookSigningKey: signingKey(),
    publicUrl: publicUrl(),
    redisUrl,
    redisTimeoutMs: integer("REDIS_TIMEOUT_MS", limits.redisCommandMs, 10, 10_000),
    rateLimits: rawRateLimits !== "off",
    signatureVerifier,
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

/** S3 bucket names: 3 to 63 lower-case letters, digits, dots and hyphens, a letter or digit at each end. */
const bucketPattern = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const s3Variables = ["S3_BUCKET", "S3_REGION", "S3_ENDPOINT", "S3_FORCE_PATH_STYLE"] as const;

function fileStoreConfig(env: Record<string, string | undefined>, problems: string[]): FileStoreConfig {
  const kind = env.FILE_STORE || "local";
  if (kind !== "local" && kind !== "s3") {
    problems.push(`FILE_STORE: expected local or s3, got "${kind}"`);
    return { kind: "local" };
  }
  if (kind === "local") {
    // An S3 setting without FILE_STORE=s3 would otherwise put KYC files on the local disk unnoticed.
    for (const name of s3Variables) {
      if (env[name])
        problems.push(`${name}: set, but FILE_STORE is local (set FILE_STORE=s3, or remove ${name})`);
    }
    return { kind: "local" };
  }
  const bucket = env.S3_BUCKET || "";
  if (bucket === "") problems.push("S3_BUCKET: required with FILE_STORE=s3");
  else if (!bucketPattern.test(bucket) || bucket.includes("..")) {
    problems.push(
      `S3_BUCKET: expected a bucket name (3-63 lower-case letters, digits, dots, hyphens), got "${bucket}"`,
    );
  }
  const region = env.S3_REGION || env.AWS_REGION || "";
  if (region === "") problems.push("S3_REGION: required with FILE_STORE=s3 (or set AWS_REGION)");
  else if (!/^[a-z0-9-]{1,64}$/.test(region)) {
    problems.push(`S3_REGION: expected a region name such as eu-west-1, got "${region}"`);
  }
  const endpoint = env.S3_ENDPOINT || null;
  if (endpoint !== null) {
    const problem = endpointProblem(endpoint);
    if (problem !== null) problems.push(`S3_ENDPOINT: ${problem}`);
  }
  const pathStyle = env.S3_FORCE_PATH_STYLE || "false";
  if (pathStyle !== "true" && pathStyle !== "false") {
    problems.push(`S3_FORCE_PATH_STYLE: expected true or false, got "${pathStyle}"`);
  }
  return { kind: "s3", bucket, region, endpoint, forcePathStyle: pathStyle === "true" };
}

/** Why `value` is not a usable S3 endpoint, or null. Credentials never go in it: they would be logged. */
function endpointProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "expected an http:// or https:// URL";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "expected an http:// or https:// URL";
  if (url.username !== "" || url.password !== "") {
    return "must not hold credentials (use AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)";
  }
  if (url.search !== "" || url.hash !== "") return "expected a URL without a query or fragment";
  return null;
}

/** One IPv4 field in decimal: 0 to 255, no leading zero. */
const ipv4Field = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
const ipv4Text = new RegExp(`^${ipv4Field}(?:\\.${ipv4Field}){3}$`);

/**
 * An address written the one way everybody reads alike: IPv4 as four decimal fields without
 * leading zeros; IPv6 as hex groups, its IPv4 tail (if any) as above, with no zone. ipaddr.js
 * (as inet_aton) also takes `127.1`, `0x7f000001`, `2130706433` and octal fields (`127.0.0.010`
 * is 127.0.0.8): an allow-list entry in such a form would be shown as typed and match another
 * host than the one a reader sees, so it is refused (docs/decisions.md, "Hardening").
 */
function isPlainIp(text: string): boolean {
  if (ipv4Text.test(text)) return true;
  if (!/^[0-9A-Fa-f:.]+$/.test(text) || !text.includes(":")) return false;
  const tail = text.slice(text.lastIndexOf(":") + 1);
  if (tail.includes(".") && !ipv4Text.test(tail)) return false;
  return ipaddr.IPv6.isValid(text);
}

/** An address or a CIDR range in the plain form (isPlainIp), its prefix length in decimal. */
export function isCidrOrIp(value: string): boolean {
  const slash = value.indexOf("/");
  if (slash === -1) return isPlainIp(value);
  const address = value.slice(0, slash);
  const bits = value.slice(slash + 1);
  if (!isPlainIp(address) || !/^(?:0|[1-9][0-9]{0,2})$/.test(bits)) return false;
  return Number(bits) <= (address.includes(":") ? 128 : 32);
}
