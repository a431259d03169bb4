// `counterpart call METHOD PATH`: one signed partner request (spec §5), its status and body
// printed. The body is sent as the --data string was given, byte for byte, and that is what is
// hashed; the signed path is the path and query of the URL actually requested.

import { signRequest } from "@counterpart/protocol";
import type { Command } from "commander";
import { networkReason } from "./admin-client.ts";
import { FailureError, UsageError } from "./errors.ts";
import { dataDir, type Env, readDemoPartner, readEndpoints, readPrivateKeyFile } from "./local-files.ts";
import { emit, type OutputOptions } from "./output.ts";

const defaultPartnerUrl = "http://127.0.0.1:8080";
const requestTimeoutMs = 30_000;
const methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];

interface CallOptions extends OutputOptions {
  data?: string;
  partner?: string;
  key?: string;
  url?: string;
}

/** Registers `call`; `setExit` receives 0 for a 2xx answer and 1 for any other. */
export function registerCallCommand(program: Command, env: Env, setExit: (code: 0 | 1) => void): void {
  program
    .command("call")
    .description("sign and send one partner request; prints the status and body")
    .argument("<method>", "GET, POST, PUT or DELETE")
    .argument("<path>", "request path and query, e.g. /v1/partner/asset-pairs")
    .option("--data <json>", "request body, sent exactly as given")
    .option("--partner <id>", "partner id (default: COUNTERPART_PARTNER_ID, else the sandbox demo partner)")
    .option(
      "--key <file>",
      "the partner's Ed25519 private key PEM (default: COUNTERPART_KEY_FILE, else the demo key)",
    )
    .option(
      "--url <base>",
      "partner API base URL (default: DATA_DIR/endpoints.json, else http://127.0.0.1:8080)",
    )
    .option("--json", "print one JSON object {status, body} on stdout")
    .action(async (method: string, target: string, options: CallOptions) => {
      const result = await call(method, target, options, env);
      setExit(result.status >= 200 && result.status < 300 ? 0 : 1);
      emit(options, { status: result.status, body: result.body }, () => {
        const head = `HTTP ${result.status}${result.statusText ? ` ${result.statusText}` : ""}`;
        if (result.body === null) return head;
        const text = typeof result.body === "string" ? result.body : JSON.stringify(result.body, null, 2);
        return `${head}\n${text}`;
      });
    });
}

interface CallResult {
  status: number;
  statusText: string;
  /** The parsed JSON body, else the text, else null for an empty body. */
  body: unknown;
}

function resolveSigner(options: CallOptions, env: Env): { partnerId: string; keyFile: string } {
  const partnerId = options.partner || env.COUNTERPART_PARTNER_ID || null;
  const keyFile = options.key || env.COUNTERPART_KEY_FILE || null;
  if (partnerId !== null && keyFile !== null) return { partnerId, keyFile };
  if (partnerId !== null)
    throw new UsageError("--key FILE is required with --partner (or set COUNTERPART_KEY_FILE)");
  if (keyFile !== null)
    throw new UsageError("--partner ID is required with --key (or set COUNTERPART_PARTNER_ID)");
  const dir = dataDir(env);
  const demo = readDemoPartner(dir);
  if (demo === null) {
    throw new UsageError(
      `--partner ID and --key FILE are required: there is no sandbox demo partner in ${dir} (set DATA_DIR, or start the sandbox)`,
    );
  }
  return { partnerId: demo.partnerId, keyFile: demo.privateKeyPath };
}

function requestUrl(base: string, target: string): URL {
  let baseUrl: URL;
  try {
    baseUrl = new URL(base);
  } catch {
    throw new UsageError(`--url: "${base}" is not a URL (expected e.g. ${defaultPartnerUrl})`);
  }
  if (
    (baseUrl.protocol !== "http:" && baseUrl.protocol !== "https:") ||
    baseUrl.search !== "" ||
    baseUrl.hash !== ""
  ) {
    throw new UsageError(`--url: "${base}" is not an http:// or https:// base URL without query`);
  }
  if (!target.startsWith("/") || target.includes("#")) {
    throw new UsageError(`PATH must start with "/" and carry no #fragment, got "${target}"`);
  }
  return new URL(`${baseUrl.origin}${baseUrl.pathname.replace(/\/+$/, "")}${target}`);
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
  const base = options.url || readEndpoints(dataDir(env))?.partner_url || defaultPartnerUrl;
  const url = requestUrl(base, target);
  const signer = resolveSigner(options, env);
  const privateKey = readPrivateKeyFile(signer.keyFile);

  const headers: Record<string, string> = {
    ...signRequest({
      partnerId: signer.partnerId,
      privateKey,
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
      `cannot reach the partner API at ${url.origin} (${networkReason(err)}); is the service running?`,
    );
  }
  let text: string;
  try {
    text = await response.text();
  } catch (err) {
    throw new FailureError(`the partner API's answer could not be read (${networkReason(err)})`);
  }
  let body: unknown = text === "" ? null : text;
  if (text !== "") {
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: shown as text
    }
  }
  return { status: response.status, statusText: response.statusText, body };
}
