// `counterpart call METHOD PATH`: one signed partner request (docs/reference.md §5), its status and body
// printed. The body is sent as the --data string was given, byte for byte, and that is what is
// hashed; the signed path is the path and query of the URL actually requested.

import { signRequest } from "@counterpart/protocol";
import type { Command } from "commander";
import { FailureError, networkReason, UsageError } from "../common/errors.ts";
import type { Env } from "../common/local-files.ts";
import { emit, type OutputOptions } from "../common/output.ts";
import { withGlobalOptions } from "../common/program.ts";
import { baseUrlText, type PartnerFlags, partnerFlags, resolveBaseUrl, resolveSigner } from "./target.ts";

const requestTimeoutMs = 30_000;
const methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];

interface CallOptions extends OutputOptions, PartnerFlags {
  data?: string;
}

/**
 * The exit code of an answer, by the rule of every partner command (api.ts): 0 for a 2xx; 2 for a
 * 4xx the caller fixes by changing the request (400, 404, 409, 422, ...); 1 for the rest: 401 (the
 * signature, clock or allow-list), 405 (no such method on the route), 408 and 429 (nothing was
 * applied; send it again), 5xx and anything else.
 */
export function callExitCode(status: number): 0 | 1 | 2 {
  if (status >= 200 && status < 300) return 0;
  if (status >= 400 && status < 500 && ![401, 405, 408, 429].includes(status)) return 2;
  return 1;
}

/** Registers `call`; `setExit` receives the answer's exit code (callExitCode). */
export function registerCallCommand(program: Command, env: Env, setExit: (code: 0 | 1 | 2) => void): void {
  const callCommand = program
    .command("call")
    .description("sign and send one partner request; prints the status and body (--json: {status, body})")
    .argument("<method>", "GET, POST, PUT or DELETE")
    .argument("<path>", "request path and query, e.g. /v1/partner/asset-pairs")
    .option("--data <json>", "request body, sent exactly as given");
  partnerFlags(callCommand).action(
    withGlobalOptions(async (method: string, target: string, options: CallOptions) => {
      const result = await call(method, target, options, env);
      setExit(callExitCode(result.status));
      emit(options, { status: result.status, body: result.body }, () => {
        const head = `HTTP ${result.status}${result.statusText ? ` ${result.statusText}` : ""}`;
        const note =
          result.status === 429
            ? `\nrate limit reached: nothing was applied; send it again ${result.retryAfter === null ? "later" : `in ${result.retryAfter} s`}`
            : "";
        if (result.body === null) return `${head}${note}`;
        const text = typeof result.body === "string" ? result.body : JSON.stringify(result.body, null, 2);
        return `${head}\n${text}${note}`;
      });
    }),
  );
}

interface CallResult {
  status: number;
  statusText: string;
  /** The parsed JSON body, else the text, else null for an empty body. */
  body: unknown;
  /** Retry-After, as sent (seconds), or null. */
  retryAfter: string | null;
}

/** The URL to request: the base URL with the path and query appended as given. */
function requestUrl(base: URL, target: string): URL {
  if (!target.startsWith("/") || target.includes("#")) {
    throw new UsageError(`PATH must start with "/" and carry no #fragment, got "${target}"`);
  }
  return new URL(`${baseUrlText(base)}${target}`);
}

async function call(rawMethod: string, target: string, options: CallOptions, env: Env): Promise<CallResult> {
  const method = rawMethod.toUpperCase();
  if (!methods.includes(method))
    throw new UsageError(`METHOD must be one of ${methods.join(", ")}, got "${rawMethod}"`);
  const data = options.data;
  if (data !== undefined) {
    if (method === "GET" || method === "HEAD") throw new UsageError(`--data cannot be sent with ${method}`);
    try {
      JSON.parse(data);
    } catch (err) {
      throw new UsageError(`--data is not valid JSON: ${(err as Error).message}`);
    }
  }
  const url = requestUrl(resolveBaseUrl(options, env), target);
  const signer = resolveSigner(options, env);

  const headers: Record<string, string> = {
    ...signRequest({
      partnerId: signer.partnerId,
      privateKey: signer.privateKey,
      method,
      target: `${url.pathname}${url.search}`,
      body: data,
      nowMs: Date.now(),
    }),
    Accept: "application/json",
  };
  if (data !== undefined) headers["Content-Type"] = "application/json";

  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers,
      ...(data === undefined ? {} : { body: data }),
      redirect: "manual",
      signal: AbortSignal.timeout(requestTimeoutMs),
    });
  } catch (err) {
    throw new FailureError(
      `cannot reach the partner API at ${url.origin} (${networkReason(err, requestTimeoutMs)}); is the service running?`,
    );
  }
  let text: string;
  try {
    text = await response.text();
  } catch (err) {
    throw new FailureError(
      `the partner API's answer could not be read (${networkReason(err, requestTimeoutMs)})`,
    );
  }
  let body: unknown = text === "" ? null : text;
  if (text !== "") {
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: shown as text
    }
  }
  return {
    status: response.status,
    statusText: response.statusText,
    body,
    retryAfter: response.headers.get("retry-after"),
  };
}
