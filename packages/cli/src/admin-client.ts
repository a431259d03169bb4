// The admin API as the CLI sees it (packages/server/src/modules/admin/admin-routes.ts,
// admin-money-routes.ts, admin-trading-routes.ts). Where it listens and its bearer token come from
// --admin-url/--admin-token, else COUNTERPART_ADMIN_URL / ADMIN_TOKEN, else what the running sandbox
// wrote into its data folder. Its answers map to the CLI's exit codes: 404 (an unknown id) and 422
// are bad input (2); unreachable, 401 and anything else are 1.

import path from "node:path";
import { FailureError, UsageError } from "./errors.ts";
import { dataDir, type Env, readEndpoints, readFolderAdminToken } from "./local-files.ts";

/** How long one admin call may take before the CLI gives up. */
const requestTimeoutMs = 30_000;

export interface AdminFlags {
  adminUrl?: string | undefined;
  adminToken?: string | undefined;
}

export interface AdminTarget {
  url: string;
  token: string;
  /** Where the token came from, to name it when the service refuses it. */
  tokenSource: string;
}

/** A partner as the admin API returns it. */
export interface AdminPartner {
  id: string;
  name: string;
  active: boolean;
  has_public_key: boolean;
  public_key_pem: string | null;
  allowed_ips: string[];
  created_at: string;
  updated_at: string;
}

/** An asset as the admin API returns it (the public catalog's shape). */
export interface AdminAsset {
  id: string;
  type: "fiat" | "crypto";
  name_en: string;
  decimal_places: number;
  published: boolean;
  depositable: boolean;
  withdrawable: boolean;
}

/** What `PUT /admin/assets/:id` may change; a new asset needs type and name_en. */
export interface AssetChanges {
  type?: "fiat" | "crypto";
  name_en?: string;
  decimal_places?: number;
  published?: boolean;
  depositable?: boolean;
  withdrawable?: boolean;
  /** decimal text; null clears it */
  usd_rate?: string | null;
}

/** A pair as the admin API returns it; decimals are text at scale 8. */
export interface AdminPair {
  id: string;
  base_id: string;
  quote_id: string;
  buy: string;
  sell: string;
  tradable: boolean;
  min_volume: string;
  max_volume: string;
  lifetime_s: number;
  fee_rate: string;
  price_at: string;
  /** true while prices set by hand hold the pair; false when the feed drives it */
  price_pinned: boolean;
}

/** What `PUT /admin/pairs/:id` may change (decimals as text, checked by the service). */
export interface PairChanges {
  tradable?: boolean;
  min_volume?: string;
  max_volume?: string;
  lifetime_s?: number;
}

/** One partner's settings for one pair. */
export interface AdminPartnerPair {
  partner_id: string;
  pair_id: string;
  available: boolean;
  /** the partner's own rate for the pair; null falls back to its default, then the pair's */
  fee_rate: string | null;
}

/** A partner's default fee rate and VAT percentage. */
export interface AdminPartnerFees {
  fee_rate: string | null;
  vat_percentage: string | null;
}

/** One inconsistency the ledger check found (packages/server/src/modules/ledger/ledger-store.ts). */
export interface LedgerDifference {
  kind: string;
  account_id?: number;
  account?: string;
  order_id?: number;
  asset_id?: string;
  recorded?: string;
  from_postings?: string;
}

export interface LedgerReport {
  ok: boolean;
  differences: LedgerDifference[];
}

export function resolveAdminTarget(flags: AdminFlags, env: Env): AdminTarget {
  const dir = dataDir(env);
  const endpoints = readEndpoints(dir);
  const url = flags.adminUrl || env.COUNTERPART_ADMIN_URL || endpoints?.admin_url || null;
  if (url === null) {
    throw new UsageError(
      endpoints === null
        ? `no admin API address: pass --admin-url URL, set COUNTERPART_ADMIN_URL, or start the service (counterpart serve) with this data folder (${dir})`
        : `the service recorded in ${path.join(dir, "endpoints.json")} runs no admin API; pass --admin-url URL or set COUNTERPART_ADMIN_URL`,
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`admin API address "${url}" is not a URL (expected e.g. http://127.0.0.1:8081)`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new UsageError(`admin API address "${url}" is not an http:// or https:// URL`);
  }

  let token: string | null = null;
  let tokenSource = "";
  if (flags.adminToken) {
    token = flags.adminToken;
    tokenSource = "--admin-token";
  } else if (env.ADMIN_TOKEN) {
    token = env.ADMIN_TOKEN;
    tokenSource = "ADMIN_TOKEN";
  } else {
    token = readFolderAdminToken(dir);
    tokenSource = path.join(dir, "admin-token");
  }
  if (token === null) {
    throw new UsageError(
      `no admin token: pass --admin-token TOKEN, set ADMIN_TOKEN, or run beside the service's data folder (${dir})`,
    );
  }
  return { url: url.replace(/\/+$/, ""), token, tokenSource };
}

interface ErrorBody {
  code?: unknown;
  msg?: unknown;
  msg_detail?: unknown;
}

/**
 * The field messages of a 422 ("allowed_ips: ..."), else its msg. `names` renames a field (as
 * "min_volume" or "path.pair_id") to what the operator typed (as "--min-volume").
 */
function validationMessage(body: ErrorBody, names: Readonly<Record<string, string>> = {}): string {
  if (Array.isArray(body.msg_detail) && body.msg_detail.length > 0) {
    return body.msg_detail
      .map((d: { loc?: unknown; msg?: unknown }) => {
        const field = Array.isArray(d.loc) ? d.loc.filter((p) => p !== "body").join(".") : "";
        const loc = Object.hasOwn(names, field) ? (names[field] ?? field) : field;
        const msg = typeof d.msg === "string" ? d.msg : "invalid";
        return loc === "" ? msg : `${loc}: ${msg}`;
      })
      .join("; ");
  }
  return typeof body.msg === "string" ? body.msg : "the request was refused as invalid";
}

function isPathError(body: ErrorBody): boolean {
  return (
    Array.isArray(body.msg_detail) &&
    body.msg_detail.some((d: { loc?: unknown }) => Array.isArray(d.loc) && d.loc[0] === "path")
  );
}

/** A bad-input line, or how to work it out (one more call, to tell which of two ids is unknown). */
type Reason = string | (() => Promise<string>);

/** How the refusals of one call read to the operator. */
interface Refusals {
  /** A 404: the id the route names is unknown. Without it a 404 means the route is missing (exit 1). */
  notFound?: Reason;
  /** A 422 about the path: an id the route refuses outright. Without it, the 422's own message. */
  badPath?: Reason;
  /** Body field (or "path.<param>") → what the operator typed, for 422 messages. */
  names?: Readonly<Record<string, string>>;
}

const reason = async (r: Reason): Promise<string> => (typeof r === "string" ? r : r());

export class AdminClient {
  readonly #target: AdminTarget;

  constructor(target: AdminTarget) {
    this.#target = target;
  }

  async createPartner(input: {
    name: string;
    publicKeyPem: string | null;
    allowedIps: string[];
  }): Promise<AdminPartner> {
    const body = { name: input.name, public_key_pem: input.publicKeyPem, allowed_ips: input.allowedIps };
    return partnerOf(await this.#request("POST", "/admin/partners", body, null));
  }

  async listPartners(): Promise<AdminPartner[]> {
    const answer = (await this.#request("GET", "/admin/partners", undefined, null)) as { items?: unknown };
    if (!Array.isArray(answer?.items)) throw unexpected("GET /admin/partners");
    return answer.items as AdminPartner[];
  }

  async showPartner(id: string): Promise<AdminPartner> {
    return partnerOf(await this.#request("GET", partnerPath(id), undefined, id));
  }

  async setKey(id: string, publicKeyPem: string): Promise<AdminPartner> {
    return partnerOf(
      await this.#request("PUT", `${partnerPath(id)}/key`, { public_key_pem: publicKeyPem }, id),
    );
  }

  async setIps(id: string, allowedIps: string[]): Promise<AdminPartner> {
    return partnerOf(await this.#request("PUT", `${partnerPath(id)}/ips`, { allowed_ips: allowedIps }, id));
  }

  async setActive(id: string, active: boolean): Promise<AdminPartner> {
    return partnerOf(await this.#request("PUT", `${partnerPath(id)}/active`, { active }, id));
  }

  /** Creates the asset (which needs type and name_en) or changes the given fields. */
  async upsertAsset(id: string, changes: AssetChanges): Promise<{ created: boolean; asset: AdminAsset }> {
    const { status, body } = await this.#call("PUT", `/admin/assets/${encodeURIComponent(id)}`, changes, {
      names: {
        "path.asset_id": `asset id "${id}"`,
        type: "--type",
        name_en: "--name",
        decimal_places: "--decimals",
        published: "--published",
        depositable: "--depositable",
        withdrawable: "--withdrawable",
        usd_rate: "--usd-rate",
      },
    });
    return { created: status === 201, asset: resultOf<AdminAsset>(body, "id", "the asset answer") };
  }

  /** Creates the pair (not tradable, and pinned at a placeholder price until `price set`) or changes it. */
  async upsertPair(id: string, changes: PairChanges): Promise<AdminPair> {
    const answer = await this.#request("PUT", pairPath(id), changes, {
      names: {
        "path.pair_id": `pair "${id}"`,
        tradable: "--tradable",
        min_volume: "--min-volume",
        max_volume: "--max-volume",
        lifetime_s: "--lifetime",
      },
    });
    return resultOf<AdminPair>(answer, "id", "the pair answer");
  }

  /** Sets the pair's prices by hand, which pins it until `resumeFeed`. */
  async setPrice(id: string, price: { buy: string; sell: string; at?: string }): Promise<AdminPair> {
    const answer = await this.#request("PUT", `${pairPath(id)}/price`, price, {
      notFound: `unknown pair ${id}`,
      badPath: `unknown pair ${id}`,
      names: { buy: "--buy", sell: "--sell", at: "--at" },
    });
    return resultOf<AdminPair>(answer, "id", "the pair answer");
  }

  /** Hands the pair's prices back to the feed. */
  async resumeFeed(id: string): Promise<AdminPair> {
    const answer = await this.#request("POST", `${pairPath(id)}/resume`, undefined, {
      notFound: `unknown pair ${id}`,
      badPath: `unknown pair ${id}`,
    });
    return resultOf<AdminPair>(answer, "id", "the pair answer");
  }

  /** Whether the partner sees the pair, and its own fee rate for it (null: back to its default). */
  async setPartnerPair(
    partnerId: string,
    pairId: string,
    changes: { available?: boolean; fee_rate?: string | null },
  ): Promise<AdminPartnerPair> {
    // The route answers 404 for either id; asking for the partner tells which one it was.
    const unknown = async () => {
      await this.showPartner(partnerId);
      return `unknown pair ${pairId}`;
    };
    const answer = await this.#request(
      "PUT",
      `${partnerPath(partnerId)}/pairs/${encodeURIComponent(pairId)}`,
      changes,
      { notFound: unknown, badPath: unknown, names: { available: "--available", fee_rate: "--rate" } },
    );
    return resultOf<AdminPartnerPair>(answer, "pair_id", "the partner pair answer");
  }

  /** The partner's default fee rate and VAT percentage (null clears either). */
  async setPartnerFees(
    partnerId: string,
    changes: { fee_rate?: string | null; vat_percentage?: string | null },
  ): Promise<AdminPartnerFees> {
    const answer = await this.#request("PUT", `${partnerPath(partnerId)}/fees`, changes, {
      notFound: `unknown partner ${partnerId}`,
      badPath: `unknown partner ${partnerId}`,
      names: { fee_rate: "--rate", vat_percentage: "--vat-percentage" },
    });
    const result = (answer as { result?: Partial<AdminPartnerFees> } | null)?.result;
    if (result === undefined || !("fee_rate" in result) || !("vat_percentage" in result)) {
      throw unexpected("the partner fees answer");
    }
    return result as AdminPartnerFees;
  }

  /** Recomputes every balance from its postings; the differences found, if any. */
  async checkLedger(): Promise<LedgerReport> {
    const answer = await this.#request("GET", "/admin/ledger/check", undefined, null);
    const result = (answer as { result?: { ok?: unknown; differences?: unknown } } | null)?.result;
    if (typeof result?.ok !== "boolean" || !Array.isArray(result.differences)) {
      throw unexpected("GET /admin/ledger/check");
    }
    return { ok: result.ok, differences: result.differences as LedgerDifference[] };
  }

  /**
   * One call, its parsed answer. `refusals` says what a 404 or a 422 means for this route; a
   * string names the partner the route is about (a 404 is then "unknown partner").
   */
  async #request(
    method: string,
    urlPath: string,
    body: unknown,
    refusals: Refusals | string | null,
  ): Promise<unknown> {
    return (await this.#call(method, urlPath, body, refusals)).body;
  }

  async #call(
    method: string,
    urlPath: string,
    body: unknown,
    about: Refusals | string | null,
  ): Promise<{ status: number; body: unknown }> {
    const refusals: Refusals =
      typeof about === "string"
        ? { notFound: `unknown partner ${about}`, badPath: `unknown partner ${about}` }
        : (about ?? {});
    const { url, token, tokenSource } = this.#target;
    let response: Response;
    try {
      response = await fetch(`${url}${urlPath}`, {
        method,
        headers: {
          Authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        redirect: "manual",
        signal: AbortSignal.timeout(requestTimeoutMs),
      });
    } catch (err) {
      throw new FailureError(
        `cannot reach the admin API at ${url} (${networkReason(err)}); is the service running?`,
      );
    }
    const text = await response.text().catch(() => "");
    let parsed: unknown = null;
    try {
      parsed = text === "" ? null : JSON.parse(text);
    } catch {
      parsed = null;
    }
    if (response.ok) {
      if (parsed === null) throw unexpected(`${method} ${urlPath}`);
      return { status: response.status, body: parsed };
    }
    const error = (parsed ?? {}) as ErrorBody;
    switch (response.status) {
      case 401:
        throw new FailureError(
          `the admin API at ${url} refused the admin token (401 Unauthorized); check ${tokenSource}`,
        );
      case 404:
        if (refusals.notFound !== undefined) throw new UsageError(await reason(refusals.notFound));
        throw new FailureError(
          `the admin API at ${url} has no ${method} ${urlPath} (404); is it a Counterpart admin API?`,
        );
      case 422:
        // An id the route refuses outright (too long, say) names nothing that exists either.
        if (refusals.badPath !== undefined && isPathError(error)) {
          throw new UsageError(await reason(refusals.badPath));
        }
        throw new UsageError(validationMessage(error, refusals.names));
    }
    const msg = typeof error.msg === "string" ? `: ${error.msg}` : "";
    throw new FailureError(`the admin API answered ${response.status}${msg}`);
  }
}

function partnerPath(id: string): string {
  return `/admin/partners/${encodeURIComponent(id)}`;
}

function pairPath(id: string): string {
  return `/admin/pairs/${encodeURIComponent(id)}`;
}

/** The answer's `result`, checked to carry `key` as a string. */
function resultOf<T>(answer: unknown, key: string, what: string): T {
  const result = (answer as { result?: Record<string, unknown> } | null)?.result;
  if (typeof result?.[key] !== "string") throw unexpected(what);
  return result as T;
}

function partnerOf(answer: unknown): AdminPartner {
  const result = (answer as { result?: { id?: unknown } } | null)?.result;
  if (typeof result?.id !== "string") throw unexpected("the partner answer");
  return result as AdminPartner;
}

function unexpected(what: string): FailureError {
  return new FailureError(`unexpected answer from the admin API to ${what}`);
}

/** Why fetch failed: the socket error's code (ECONNREFUSED, ENOTFOUND) or a timeout. */
export function networkReason(err: unknown): string {
  if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError")) {
    return `no answer within ${requestTimeoutMs / 1000} s`;
  }
  const cause = (err as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === "string") return cause.code;
  if (typeof cause?.message === "string") return cause.message;
  return err instanceof Error ? err.message : String(err);
}
