// Which webhook URLs and addresses the service posts to (docs/reference.md, "Webhooks"): https
// outside the sandbox; never a private, loopback, link-local or otherwise special address unless
// the operator allows it (the sandbox allows loopback). The host is resolved at every attempt and
// the address checked is the one connected to, so a name cannot be pointed elsewhere afterwards.

import dns from "node:dns";
import ipaddr from "ipaddr.js";

export interface UrlPolicy {
  /** Outside the sandbox: only https. */
  requireHttps: boolean;
  /** The sandbox: loopback addresses. */
  allowLoopback: boolean;
  /** The operator's choice (WEBHOOK_ALLOW_PRIVATE): private, loopback and link-local addresses. */
  allowPrivate: boolean;
}

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

/** The URL as registered: its form, and its host when that is an address. */
export function checkWebhookUrl(text: string, policy: UrlPolicy): UrlCheck {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: "Not an absolute URL" };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    return { ok: false, reason: "Only https URLs are accepted" };
  if (url.protocol === "http:" && policy.requireHttps)
    return { ok: false, reason: "Only https URLs are accepted" };
  if (url.username !== "" || url.password !== "")
    return { ok: false, reason: "A URL with credentials is refused" };
  if (url.hash !== "") return { ok: false, reason: "A URL with a fragment is refused" };
  if (url.hostname === "") return { ok: false, reason: "Not an absolute URL" };
  const literal = hostAddress(url.hostname);
  if (literal !== null && !addressAllowed(literal, policy))
    return { ok: false, reason: "The address is private, loopback, link-local or reserved" };
  if (
    literal === null &&
    /^localhost\.?$/i.test(url.hostname) &&
    !policy.allowLoopback &&
    !policy.allowPrivate
  )
    return { ok: false, reason: "The address is private, loopback, link-local or reserved" };
  return { ok: true, url };
}

/** The address a URL host names literally ("[::1]" included), or null for a name. */
function hostAddress(hostname: string): string | null {
  const bare = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) ? bare : null;
}

/** Whether the service may connect to `address`: public unicast always; the rest as the policy says. */
export function addressAllowed(address: string, policy: UrlPolicy): boolean {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return false;
  }
  const range = parsed.range();
  if (range === "unicast") return true;
  if (range === "loopback") return policy.allowLoopback || policy.allowPrivate;
  if (range === "private" || range === "linkLocal" || range === "uniqueLocal" || range === "carrierGradeNat")
    return policy.allowPrivate;
  return false;
}

export type Resolved = { ok: true; address: string; family: 4 | 6 } | { ok: false; reason: string };

export type Resolver = (host: string) => Promise<{ address: string; family: number }[]>;

export const systemResolver: Resolver = (host) => dns.promises.lookup(host, { all: true, verbatim: true });

/**
 * The address to connect to for `url`: every address the name resolves to must be allowed (a
 * name with one public and one private address is refused), and the first one is used.
 */
export async function resolveTarget(url: URL, policy: UrlPolicy, resolver: Resolver): Promise<Resolved> {
  const literal = hostAddress(url.hostname);
  const found =
    literal !== null
      ? [{ address: literal, family: ipaddr.parse(literal).kind() === "ipv6" ? 6 : 4 }]
      : await resolver(url.hostname).catch(() => []);
  if (found.length === 0) return { ok: false, reason: "the host name does not resolve" };
  for (const a of found) {
    if (!addressAllowed(a.address, policy))
      return { ok: false, reason: `address ${a.address} is not allowed` };
  }
  const first = found[0]!;
  return { ok: true, address: first.address, family: first.family === 6 ? 6 : 4 };
}
