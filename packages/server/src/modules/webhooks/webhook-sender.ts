// One webhook POST: to the address already checked (the connection is pinned to it, whatever the
// name resolves to by then), within a time bound, without following redirects, reading at most a
// few KiB of the answer. Never throws: the outcome is a status code or an error in our words.

import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";

export interface SendOutcome {
  statusCode: number | null;
  error: string | null;
}

export interface SendRequest {
  url: URL;
  address: string;
  family: 4 | 6;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  responseBytesMax: number;
}

export function postWebhook(r: SendRequest): Promise<SendOutcome> {
  return new Promise<SendOutcome>((resolve) => {
    let settled = false;
    const done = (o: SendOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(o);
    };
    const lookup: LookupFunction = (_host, options, callback) => {
      if ((options as { all?: boolean }).all)
        (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [
          { address: r.address, family: r.family },
        ]);
      else callback(null, r.address, r.family);
    };
    const body = Buffer.from(r.body, "utf8");
    const options: https.RequestOptions = {
      method: "POST",
      protocol: r.url.protocol,
      hostname: r.url.hostname.replace(/^\[|\]$/g, ""),
      port: r.url.port === "" ? undefined : Number(r.url.port),
      path: `${r.url.pathname}${r.url.search}`,
      headers: { ...r.headers, "content-type": "application/json", "content-length": String(body.length) },
      lookup,
      agent: false,
    };
    const req = r.url.protocol === "https:" ? https.request(options) : http.request(options);
    const timer = setTimeout(() => done({ statusCode: null, error: "timed out" }), r.timeoutMs);
    req.on("error", (err: NodeJS.ErrnoException) =>
      done({ statusCode: null, error: `connection failed${err.code ? ` (${err.code})` : ""}` }),
    );
    req.on("response", (res) => {
      let read = 0;
      res.on("error", () => done({ statusCode: res.statusCode ?? null, error: "the answer broke off" }));
      res.on("data", (chunk: Buffer) => {
        read += chunk.length;
        // Only the status matters; the body is read up to the bound and then dropped.
        if (read >= r.responseBytesMax) done({ statusCode: res.statusCode ?? null, error: null });
      });
      res.on("end", () => done({ statusCode: res.statusCode ?? null, error: null }));
    });
    req.end(body);
  });
}
