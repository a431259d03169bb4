// The SDK's ports: HTTP, clock, sleep and randomness. The request sender reaches the world only
// through these, so tests drive signing windows, backoff and failures without sockets or waiting.

import { setTimeout as sleepFor } from "node:timers/promises";

/** What the sender hands to the HTTP port: the body is the exact bytes that were signed. */
export interface HttpRequest {
  method: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  signal: AbortSignal;
}

/** The part of a fetch Response the SDK reads; a real `Response` satisfies it. */
export interface HttpResponse {
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}

/**
 * Sends one request. Rejects when no response arrives (the rejection's `cause.code`, as undici
 * sets it, tells a refused connection from a reset one); rejects with the signal's reason when
 * the signal aborts.
 */
export type FetchPort = (url: string, init: HttpRequest) => Promise<HttpResponse>;

/** Wall-clock time in Unix milliseconds; it stamps X-Timestamp. */
export interface Clock {
  nowMs(): number;
}

/** Waits `ms` (the backoff between attempts); rejects with the signal's reason if it aborts. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** A number in [0, 1): the jitter of the backoff. */
export type Random = () => number;

export const systemFetch: FetchPort = (url, init) => fetch(url, init);

/** The global fetch with an undici dispatcher (an Agent or ProxyAgent) on every request. */
export function dispatchingFetch(dispatcher: unknown): FetchPort {
  return (url, init) => fetch(url, { ...init, dispatcher } as RequestInit);
}

export const systemClock: Clock = { nowMs: () => Date.now() };

export const systemSleep: Sleep = async (ms, signal) => {
  try {
    await sleepFor(ms, undefined, signal === undefined ? undefined : { signal });
  } catch (err) {
    // timers/promises rejects with its own AbortError; the port promises the signal's reason.
    if (signal?.aborted) throw signal.reason;
    throw err;
  }
};

export const systemRandom: Random = () => Math.random();
