// The admin API as the CLI sees it (packages/server/src/modules/admin/admin-routes.ts). Where it
// listens and its bearer token come from --admin-url/--admin-token, else COUNTERPART_ADMIN_URL /
// ADMIN_TOKEN, else what the running sandbox wrote into its data folder. Its answers map to the
// CLI's exit codes: 404 and 422 are bad input (2); unreachable, 401 and anything else are 1.

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

/** The field messages of a 422 ("allowed_ips: ..."), else its msg. */
function validationMessage(body: ErrorBody): string {
  if (Array.isArray(body.msg_detail) && body.msg_detail.length > 0) {
    return body.msg_detail
      .map((d: { loc?: unknown; msg?: unknown }) => {
        const loc = Array.isArray(d.loc) ? d.loc.filter((p) => p !== "body").join(".") : "";
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

  /** One call; `partnerId` names the partner a 404 is about. */
  async #request(method: string, urlPath: string, body: unknown, partnerId: string | null): Promise<unknown> {
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
      return parsed;
    }
    const error = (parsed ?? {}) as ErrorBody;
    switch (response.status) {
      case 401:
        throw new FailureError(
          `the admin API at ${url} refused the admin token (401 Unauthorized); check ${tokenSource}`,
        );
      case 404:
        if (partnerId !== null) throw new UsageError(`unknown partner ${partnerId}`);
        throw new FailureError(
          `the admin API at ${url} has no ${method} ${urlPath} (404); is it a Counterpart admin API?`,
        );
      case 422:
        // An id the route refuses outright (too long, say) names no partner either.
        if (partnerId !== null && isPathError(error)) throw new UsageError(`unknown partner ${partnerId}`);
        throw new UsageError(validationMessage(error));
    }
    const msg = typeof error.msg === "string" ? `: ${error.msg}` : "";
    throw new FailureError(`the admin API answered ${response.status}${msg}`);
  }
}

function partnerPath(id: string): string {
  return `/admin/partners/${encodeURIComponent(id)}`;
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
