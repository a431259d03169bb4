// Caps on open connections (docs/decisions.md, "Hardening"): per client address, so that one
// source holding connections open (idle keep-alives, slow requests) cannot take the sockets every
// other client needs, and per process, so that the process keeps file descriptors for its database
// connections and files whatever arrives. A connection over a cap is closed at once, before a byte
// of it is read: nothing it would have asked is done, and the client may retry (as after a reset).
// The proxies of TRUST_PROXY are exempt from the per-address cap: every request comes through them.

import type { Server } from "node:http";
import ipaddr from "ipaddr.js";
import { normaliseIp, parseRange } from "../modules/partners/index.ts";

export interface ConnectionCaps {
  /** Connections open at once from one client address (proxies of TRUST_PROXY excepted). */
  readonly perAddressMax: number;
  /** Connections open at once on the listener, from anyone. */
  readonly totalMax: number;
}

export interface ConnectionCounts {
  /** Connections open now (those counted against the caps). */
  open(): number;
  /** Connections closed at once because a cap was reached, since the listener was made. */
  refused(): number;
}

/** The cap a refused connection met: its address's, or the listener's. */
export type ConnectionCap = "address" | "listener";

export function capConnections(
  server: Server,
  caps: ConnectionCaps,
  trustedProxies: readonly string[],
  onRefused?: (cap: ConnectionCap) => void,
): ConnectionCounts {
  const proxies = trustedProxies.map(parseRange);
  const exempt = (address: string): boolean => {
    if (proxies.length === 0 || !ipaddr.isValid(address)) return false;
    const ip = normaliseIp(address);
    return proxies.some(([range, bits]) => range.kind() === ip.kind() && ip.match(range, bits));
  };
  const byAddress = new Map<string, number>();
  let open = 0;
  let refused = 0;
  // Before the HTTP server's own listener: a socket closed here is never read.
  server.prependListener("connection", (socket) => {
    const address = socket.remoteAddress ?? "";
    const counted = !exempt(address);
    const fromAddress = counted ? (byAddress.get(address) ?? 0) : 0;
    if (open >= caps.totalMax || (counted && fromAddress >= caps.perAddressMax)) {
      refused++;
      socket.on("error", () => {});
      socket.destroy();
      onRefused?.(open >= caps.totalMax ? "listener" : "address");
      return;
    }
    open++;
    if (counted) byAddress.set(address, fromAddress + 1);
    socket.once("close", () => {
      open--;
      if (!counted) return;
      const left = (byAddress.get(address) ?? 1) - 1;
      if (left <= 0) byAddress.delete(address);
      else byAddress.set(address, left);
    });
  });
  return { open: () => open, refused: () => refused };
}
