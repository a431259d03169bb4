// Environment → frozen, validated configuration. Every bad value is reported on its own line so an
// operator fixes them all in one go; nothing else in the service reads process.env.

import path from "node:path";
import ipaddr from "ipaddr.js";

export type PriceFeedKind = "simulated" | "manual";
export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";

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
  readonly priceFeed: PriceFeedKind;
  readonly priceStaleAfterSeconds: number;
  readonly quoteLifetimeSeconds: number;
  readonly legalAgeYears: number;
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

  const priceFeed = (env.PRICE_FEED || "simulated") as PriceFeedKind;
  if (priceFeed !== "simulated" && priceFeed !== "manual") {
    problems.push(`PRICE_FEED: expected simulated or manual, got "${env.PRICE_FEED}"`);
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
    priceFeed,
    priceStaleAfterSeconds: integer("PRICE_STALE_AFTER_S", 60, 1, 86_400),
    quoteLifetimeSeconds: integer("QUOTE_LIFETIME_S", 15, 1, 3_600),
    legalAgeYears: integer("LEGAL_AGE", 18, 0, 150),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

export function isCidrOrIp(value: string): boolean {
  if (ipaddr.isValid(value)) return true;
  try {
    ipaddr.parseCIDR(value);
    return true;
  } catch {
    return false;
  }
}
