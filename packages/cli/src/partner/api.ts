// The partner commands' client: the SDK (`@counterpart/sdk`) signing as the partner that
// target.ts resolves, and the translation of the SDK's errors into the CLI's exit codes
// (docs/decisions.md "Operator side"): 2 for what the caller must fix (422, the 400 application codes, 404,
// 409 and bad arguments), 1 for the rest (401, 405, 408, 429, 5xx, no answer). `call` applies the
// same rule to the status it prints (call-command.ts). A refusal is one stderr line with
// the service's code and msg; with --json its status, code, msg and msg_detail are in `error`.

import {
  ApiError,
  AuthenticationError,
  ConflictError,
  Counterpart,
  CounterpartError,
  type FetchPort,
  NetworkError,
  NotFoundError,
  OrderRefFailedError,
  RateLimitError,
  ServerError,
  ValidationError,
} from "@counterpart/sdk";
import { FailureError, UsageError } from "../common/errors.ts";
import type { Env } from "../common/local-files.ts";
import { baseUrlText, type PartnerFlags, resolveBaseUrl, resolveSigner } from "./target.ts";

export interface PartnerApi {
  counterpart: Counterpart;
  partnerId: string;
  /** Where the key came from: "the key file F" or "COUNTERPART_PRIVATE_KEY". */
  keySource: string;
  baseUrl: string;
}

/** The SDK client for these flags (see target.ts); `fetch` replaces its HTTP port. */
export function partnerApi(flags: PartnerFlags, env: Env, ports: { fetch?: FetchPort } = {}): PartnerApi {
  const baseUrl = baseUrlText(resolveBaseUrl(flags, env));
  const signer = resolveSigner(flags, env);
  let counterpart: Counterpart;
  try {
    counterpart = new Counterpart({
      baseUrl,
      partnerId: signer.partnerId,
      privateKey: signer.privateKey,
      appInfo: "counterpart-cli",
      ...(ports.fetch === undefined ? {} : { fetch: ports.fetch }),
    });
  } catch (err) {
    // The SDK checks its options (partner id format, key type) with a message naming the fix.
    throw new UsageError(oneLine(err instanceof Error ? err.message : String(err)));
  }
  return { counterpart, partnerId: signer.partnerId, keySource: signer.keySource, baseUrl };
}

/** Runs one SDK call; its failure becomes the CLI error that says what happened. */
export async function callApi<T>(
  api: PartnerApi,
  call: (counterpart: Counterpart) => Promise<T>,
): Promise<T> {
  try {
    return await call(api.counterpart);
  } catch (err) {
    throw cliErrorOf(err, api);
  }
}

function oneLine(text: string): string {
  return text.trim().replace(/\s*\n\s*/g, " ");
}

/** "amount: Input should be greater than 0" for each field error, without the "body"/"query" prefix. */
function fieldErrorsText(err: ValidationError): string {
  return err.fieldErrors
    .map((e) => {
      const loc = e.loc.filter((p, i) => !(i === 0 && (p === "body" || p === "query" || p === "path")));
      return loc.length === 0 ? e.msg : `${loc.join(".")}: ${e.msg}`;
    })
    .join("; ");
}

function detailsOf(err: CounterpartError): Record<string, unknown> {
  return {
    status: err.status,
    code: err.code,
    msg: err.msg,
    msg_detail: err.msgDetail ?? null,
    request: `${err.method} ${err.target}`,
    request_id: err.requestId,
  };
}

/** "error 2008: Invalid client ID": the code and msg as the service sent them. */
function refusal(err: CounterpartError, fallbackMsg: string): string {
  return `error ${err.code ?? err.status ?? "?"}: ${err.msg ?? fallbackMsg}`;
}

/** The CLI error for a failure of an SDK call; anything not from the SDK is returned as it is. */
export function cliErrorOf(
  err: unknown,
  api: Pick<PartnerApi, "baseUrl" | "partnerId" | "keySource">,
): unknown {
  if (err instanceof RangeError) {
    // The SDK refuses bad arguments (an empty id, a page out of bounds) before sending anything.
    return new UsageError(oneLine(err.message));
  }
  if (!(err instanceof CounterpartError)) return err;
  const details = detailsOf(err);
  if (err instanceof ValidationError) {
    const fields = fieldErrorsText(err);
    return new UsageError(
      `${refusal(err, "Validation Error")}${fields === "" ? "" : `: ${fields}`}`,
      details,
    );
  }
  if (err instanceof OrderRefFailedError) {
    return new UsageError(
      `${refusal(err, "duplicate reference")}: order ${err.order.id} holding it is ${err.order.status}; ` +
        "send the request again with a new --ref",
      { ...details, existing_order: err.order },
    );
  }
  if (err instanceof ConflictError) {
    const holder =
      err.existingOrder === null
        ? ""
        : ` (order ${err.existingOrder.id}, a ${err.existingOrder.type} of ${err.existingOrder.partner_client_id}, holds it)`;
    return new UsageError(`${refusal(err, "duplicate reference")}${holder}`, {
      ...details,
      existing_order: err.existingOrder,
    });
  }
  if (err instanceof NotFoundError) {
    return new UsageError(`${refusal(err, "Not Found")}: ${err.method} ${err.target}`, details);
  }
  if (err instanceof AuthenticationError) {
    return new FailureError(
      `${refusal(err, "Unauthorized")}: the partner API at ${api.baseUrl} refused partner ${api.partnerId}'s ` +
        `signature; check the partner id, ${api.keySource}, this machine's clock and the partner's IP allow-list`,
      details,
    );
  }
  if (err instanceof RateLimitError) {
    // Not the caller's input to fix, and not a failure of the service: exit 1, saying when to retry.
    const wait = err.retryAfterSeconds === null ? "later" : `in ${err.retryAfterSeconds} s`;
    return new FailureError(
      `${refusal(err, "Too Many Requests")}: partner ${api.partnerId}'s rate limit for this kind of request is ` +
        `reached; nothing was applied; try again ${wait}`,
      { ...details, retry_after_seconds: err.retryAfterSeconds },
    );
  }
  if (err instanceof ApiError) {
    const limit = err.limit === null ? "" : ` (limit ${err.limit})`;
    const line = `${refusal(err, `HTTP ${err.status}`)}${limit}`;
    // 405 means the CLI and the service disagree on a route: not something the caller can fix; a
    // 408 (the request arrived too slowly, after the SDK's retries) applied nothing: send it again.
    return err.status === 405 || err.status === 408
      ? new FailureError(line, details)
      : new UsageError(line, details);
  }
  if (err instanceof ServerError) {
    return new FailureError(
      `${refusal(err, `HTTP ${err.status}`)}: the service failed; the request applied nothing, try again later`,
      details,
    );
  }
  if (err instanceof NetworkError && !err.maybeSent) {
    return new FailureError(
      `cannot reach the partner API at ${api.baseUrl} (${causeCode(err) ?? "no connection"}); is the service running?`,
      details,
    );
  }
  return new FailureError(oneLine(err.message), details);
}

function causeCode(err: unknown): string | null {
  let current: unknown = err;
  for (let depth = 0; depth < 6 && typeof current === "object" && current !== null; depth++) {
    const record = current as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof record.code === "string") return record.code;
    if (Array.isArray(record.errors) && record.errors.length > 0) current = record.errors[0];
    else current = record.cause;
  }
  return null;
}
