// The admin API as the CLI sees it (packages/server/src/modules/admin/admin-routes.ts,
// admin-money-routes.ts, admin-trading-routes.ts). Where it listens and its bearer token come from
// --admin-url/--admin-token, else COUNTERPART_ADMIN_URL / ADMIN_TOKEN, else what the running sandbox
// wrote into its data folder. Its answers map to the CLI's exit codes: 404 (an unknown id) and 422
// are bad input (2); unreachable, 401 and anything else are 1.

import path from "node:path";
import type {
  AdminAsset,
  AdminPair,
  AdminPartner,
  AdminPartnerFees,
  AdminPartnerKey,
  AdminPartnerPair,
  AdminWebhookEndpoint,
  AssetChangesBody,
  AuditEntry,
  OperatorActiveBody,
  OperatorCreateBody,
  OperatorPasswordBody,
  OperatorRoleBody,
  OperatorView,
  PairChangesBody,
  PairPriceBody,
  PartnerActiveBody,
  PartnerCreateBody,
  PartnerFeesChangesBody,
  PartnerIpsBody,
  PartnerKeyAddBody,
  PartnerKeyBody,
  PartnerLimitsBody,
  PartnerPairChangesBody,
  LedgerDifference as ServerLedgerDifference,
  LedgerReport as ServerLedgerReport,
  WebhookEnabledBody,
} from "@counterpart/server";
import type { Command } from "commander";
import { FailureError, networkReason, UsageError } from "../common/errors.ts";
import { dataDir, type Env, readEndpoints, readFolderAdminToken } from "../common/local-files.ts";

// The admin API's shapes are the server's own (its TypeBox schemas, modules/*/*-views.ts): only
// their types are imported, so nothing of the server is loaded. The operator side alone may do
// this; the partner CLI is built without the server.
export type {
  AdminAsset,
  AdminPair,
  AdminPartner,
  AdminPartnerFees,
  AdminPartnerKey,
  AdminPartnerPair,
  AdminWebhookEndpoint,
};
/** A page of the audit trail as the admin API shows it. */
export interface AuditPage {
  items: AuditEntry[];
  total: number;
  page: number;
  page_size: number;
}
export type { AuditEntry };
/** An operator account as the admin API shows it. */
export type AdminOperator = OperatorView;
/** What `PUT /admin/assets/:id` may change; a new asset needs type and name_en. */
export type AssetChanges = AssetChangesBody;
/** What `PUT /admin/pairs/:id` may change (decimals as text, checked by the service). */
export type PairChanges = PairChangesBody;

/** How long one admin call may take before the CLI gives up. */
const requestTimeoutMs = 30_000;
/**
 * ... and the ledger check, which reads every posting: the service bounds it at 5 minutes
 * (limits.ledgerCheckMs) and answers 503 past that; this waits for that answer.
 */
const ledgerCheckTimeoutMs = 5 * 60_000 + 30_000;

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

/**
 * One inconsistency the ledger check found. Its kind is any text: a newer service may report a
 * kind this CLI does not know, which it shows rather than drops (admin-output.ts).
 */
export type LedgerDifference = Omit<ServerLedgerDifference, "kind"> & { kind: string };

export interface LedgerReport extends Omit<ServerLedgerReport, "differences"> {
  differences: LedgerDifference[];
}

/** --admin-url and --admin-token, shared by every admin command (--json is global: common/program.ts). */
export function adminOptions(command: Command): Command {
  return command
    .option(
      "--admin-url <url>",
      "admin API address (default: COUNTERPART_ADMIN_URL, else DATA_DIR/endpoints.json)",
    )
    .option("--admin-token <token>", "admin bearer token (default: ADMIN_TOKEN, else DATA_DIR/admin-token)");
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
    const body: PartnerCreateBody = {
      name: input.name,
      public_key_pem: input.publicKeyPem,
      allowed_ips: input.allowedIps,
    };
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
      await this.#request(
        "PUT",
        `${partnerPath(id)}/key`,
        { public_key_pem: publicKeyPem } satisfies PartnerKeyBody,
        id,
      ),
    );
  }

  /** Adds an active key; the partner's other keys stay active (at most three at once). */
  async addKey(id: string, label: string, publicKeyPem: string): Promise<AdminPartnerKey> {
    const body: PartnerKeyAddBody = { label, public_key_pem: publicKeyPem };
    const answer = await this.#request("POST", `${partnerPath(id)}/keys`, body, {
      notFound: `unknown partner ${id}`,
      badPath: `unknown partner ${id}`,
      names: { label: "--label", public_key_pem: "--public-key" },
    });
    return resultOf<AdminPartnerKey>(answer, "id", "the partner key answer");
  }

  /** Every key of the partner, retired ones too, oldest first. */
  async listKeys(id: string): Promise<AdminPartnerKey[]> {
    const answer = (await this.#request("GET", `${partnerPath(id)}/keys`, undefined, id)) as {
      items?: unknown;
    };
    if (!Array.isArray(answer?.items)) throw unexpected(`GET ${partnerPath(id)}/keys`);
    return answer.items as AdminPartnerKey[];
  }

  /** Retires the key: the next request it signs is refused. */
  async retireKey(id: string, keyId: string): Promise<AdminPartnerKey> {
    // The route answers 404 for either id; asking for the partner tells which one it was.
    const unknown = async () => {
      await this.showPartner(id);
      return `unknown key ${keyId} of partner ${id}`;
    };
    const answer = await this.#request(
      "DELETE",
      `${partnerPath(id)}/keys/${encodeURIComponent(keyId)}`,
      undefined,
      { notFound: unknown, badPath: unknown },
    );
    return resultOf<AdminPartnerKey>(answer, "id", "the partner key answer");
  }

  async setIps(id: string, allowedIps: string[]): Promise<AdminPartner> {
    const body: PartnerIpsBody = { allowed_ips: allowedIps };
    return partnerOf(await this.#request("PUT", `${partnerPath(id)}/ips`, body, id));
  }

  /** Sets the partner's rate-limit budgets per minute (null: the default; a class left out stays). */
  async setRateLimits(id: string, body: PartnerLimitsBody): Promise<AdminPartner> {
    return partnerOf(await this.#request("PUT", `${partnerPath(id)}/limits`, body, id));
  }

  async setActive(id: string, active: boolean, reason?: string): Promise<AdminPartner> {
    const body: PartnerActiveBody = { active, ...(reason === undefined ? {} : { reason }) };
    return partnerOf(await this.#request("PUT", `${partnerPath(id)}/active`, body, id));
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
  async setPrice(id: string, price: PairPriceBody): Promise<AdminPair> {
    const answer = await this.#request("PUT", `${pairPath(id)}/price`, price, {
      notFound: `unknown pair ${id}`,
      badPath: `unknown pair ${id}`,
      names: { buy: "--buy", sell: "--sell", at: "--at", reason: "--reason" },
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
    changes: PartnerPairChangesBody,
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
  async setPartnerFees(partnerId: string, changes: PartnerFeesChangesBody): Promise<AdminPartnerFees> {
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
    const answer = await this.#request("GET", "/admin/ledger/check", undefined, null, ledgerCheckTimeoutMs);
    const result = (answer as { result?: { ok?: unknown; differences?: unknown } } | null)?.result;
    if (typeof result?.ok !== "boolean" || !Array.isArray(result.differences)) {
      throw unexpected("GET /admin/ledger/check");
    }
    return { ok: result.ok, differences: result.differences as LedgerDifference[] };
  }

  /** The operator accounts, by e-mail. */
  async listOperators(): Promise<AdminOperator[]> {
    const answer = (await this.#request("GET", "/admin/operators", undefined, null)) as { items?: unknown };
    if (!Array.isArray(answer?.items)) throw unexpected("GET /admin/operators");
    return answer.items as AdminOperator[];
  }

  /** The account with this e-mail address (compared without case), or a bad-input error. */
  async findOperator(email: string): Promise<AdminOperator> {
    const wanted = email.trim().toLowerCase();
    const found = (await this.listOperators()).find((o) => o.email === wanted);
    if (found === undefined) throw new UsageError(`no operator has the e-mail address ${wanted}`);
    return found;
  }

  async createOperator(body: OperatorCreateBody): Promise<AdminOperator> {
    const answer = await this.#request("POST", "/admin/operators", body, {
      names: { email: "--email", role: "--role", password: "the password" },
    });
    return resultOf<AdminOperator>(answer, "id", "the operator answer");
  }

  /** `suffix` is role, active or password; the body is that route's. */
  async changeOperator(
    id: string,
    suffix: "role" | "active" | "password",
    body: OperatorRoleBody | OperatorActiveBody | OperatorPasswordBody,
  ): Promise<AdminOperator> {
    const answer = await this.#request("PUT", `/admin/operators/${encodeURIComponent(id)}/${suffix}`, body, {
      notFound: `unknown operator ${id}`,
      badPath: `unknown operator ${id}`,
      names: { role: "--role", password: "the password" },
    });
    return resultOf<AdminOperator>(answer, "id", "the operator answer");
  }

  /** A one-time sign-in link (the sandbox only). */
  async signInLink(id: string): Promise<{ token: string; url: string; expires_at: string }> {
    const answer = await this.#request(
      "POST",
      `/admin/operators/${encodeURIComponent(id)}/sign-in-link`,
      undefined,
      { notFound: `unknown operator ${id}` },
    );
    return resultOf<{ token: string; url: string; expires_at: string }>(
      answer,
      "url",
      "the sign-in link answer",
    );
  }

  /** A page of the audit trail, newest first. */
  async listAudit(query: Record<string, string | undefined>): Promise<AuditPage> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, v);
    const q = params.toString();
    const answer = (await this.#request("GET", `/admin/audit${q === "" ? "" : `?${q}`}`, undefined, {
      names: {
        "query.actor": "--actor",
        "query.from": "--from",
        "query.to": "--to",
        "query.page": "--page",
        "query.page_size": "--page-size",
      },
    })) as Partial<AuditPage> | null;
    if (!Array.isArray(answer?.items) || typeof answer.total !== "number")
      throw unexpected("GET /admin/audit");
    return answer as AuditPage;
  }

  /** Partners' webhook endpoints (one partner's, with `partnerId`), oldest first. */
  async listWebhookEndpoints(partnerId?: string): Promise<AdminWebhookEndpoint[]> {
    const q = partnerId === undefined ? "" : `?partner_id=${encodeURIComponent(partnerId)}`;
    const answer = (await this.#request("GET", `/admin/webhook-endpoints${q}`, undefined, {
      names: { "query.partner_id": "--partner" },
    })) as { items?: unknown };
    if (!Array.isArray(answer?.items)) throw unexpected("GET /admin/webhook-endpoints");
    return answer.items as AdminWebhookEndpoint[];
  }

  /** Disables (with the reason, kept on the audit trail) or enables a partner's webhook endpoint. */
  async setWebhookEnabled(id: string, enabled: boolean, reason?: string): Promise<AdminWebhookEndpoint> {
    const body: WebhookEnabledBody = { enabled, ...(reason === undefined ? {} : { reason }) };
    const answer = await this.#request(
      "PUT",
      `/admin/webhook-endpoints/${encodeURIComponent(id)}/enabled`,
      body,
      {
        notFound: `unknown webhook endpoint ${id}`,
        badPath: `unknown webhook endpoint ${id}`,
        names: { reason: "--reason" },
      },
    );
    return resultOf<AdminWebhookEndpoint>(answer, "id", "the webhook endpoint answer");
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
    timeoutMs = requestTimeoutMs,
  ): Promise<unknown> {
    return (await this.#call(method, urlPath, body, refusals, timeoutMs)).body;
  }

  async #call(
    method: string,
    urlPath: string,
    body: unknown,
    about: Refusals | string | null,
    timeoutMs = requestTimeoutMs,
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
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      throw new FailureError(
        `cannot reach the admin API at ${url} (${networkReason(err, timeoutMs)}); is the service running?`,
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
      case 403:
        throw new FailureError(`the admin API at ${url} refused this to the token's role (403 Forbidden)`);
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
