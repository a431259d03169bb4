// The operator's records as text: partners, assets, pairs, fees and ledger differences, as the
// admin API returns them, printed with the shared table and record layout (common/output.ts).

import { clean, formatRecord, formatTable } from "../common/output.ts";
import type {
  AdminAsset,
  AdminPair,
  AdminPartner,
  AdminPartnerFees,
  AdminPartnerKey,
  AdminPartnerPair,
  LedgerDifference,
} from "./admin-client.ts";

/** The base64 body of a PEM on one line (enough to recognise a key), or "(none)". */
export function pemSummary(pem: string | null): string {
  if (pem === null) return "(none)";
  return pem
    .replace(/-----(BEGIN|END) [A-Z ]+-----/g, "")
    .replace(/\s+/g, "")
    .trim();
}

export function formatPartner(p: AdminPartner): string {
  return formatRecord([
    ["id", p.id],
    ["name", p.name],
    ["active", String(p.active)],
    ["public_key", pemSummary(p.public_key_pem)],
    ["allowed_ips", p.allowed_ips.length === 0 ? "(none)" : p.allowed_ips.join(", ")],
    ["rate_limits", formatRateLimits(p.rate_limits)],
    ["created_at", p.created_at],
    ["updated_at", p.updated_at],
  ]);
}

/** "reads 6000/min (default), writes 100/min, quotes 1200/min (default)". */
function formatRateLimits(limits: AdminPartner["rate_limits"]): string {
  return (["reads", "writes", "quotes"] as const)
    .map((c) => `${c} ${limits[c].per_minute}/min${limits[c].default ? " (default)" : ""}`)
    .join(", ");
}

export function formatPartnerTable(items: readonly AdminPartner[]): string {
  if (items.length === 0) return "no partners";
  return formatTable(
    ["ID", "NAME", "ACTIVE", "KEY", "ALLOWED IPS"],
    items.map((p) => [
      p.id,
      p.name,
      p.active ? "yes" : "no",
      p.has_public_key ? "yes" : "no",
      p.allowed_ips.length === 0 ? "(none)" : p.allowed_ips.join(","),
    ]),
  );
}

export function formatPartnerKey(k: AdminPartnerKey): string {
  return formatRecord([
    ["id", k.id],
    ["partner_id", k.partner_id],
    ["label", k.label],
    ["active", String(k.active)],
    ["public_key", pemSummary(k.public_key_pem)],
    ["created_at", k.created_at],
    ["retired_at", k.retired_at ?? "(active)"],
  ]);
}

export function formatPartnerKeyTable(items: readonly AdminPartnerKey[]): string {
  if (items.length === 0) return "no keys";
  return formatTable(
    ["ID", "LABEL", "ACTIVE", "CREATED", "RETIRED", "KEY"],
    items.map((k) => [
      k.id,
      k.label,
      k.active ? "yes" : "no",
      k.created_at,
      k.retired_at ?? "-",
      pemSummary(k.public_key_pem),
    ]),
  );
}

export function formatAsset(a: AdminAsset, created: boolean): string {
  return formatRecord([
    ["id", a.id],
    ["type", a.type],
    ["name", a.name_en],
    ["decimal_places", String(a.decimal_places)],
    ["published", String(a.published)],
    ["depositable", String(a.depositable)],
    ["withdrawable", String(a.withdrawable)],
    ["created", String(created)],
  ]);
}

export function formatPair(p: AdminPair): string {
  return formatRecord([
    ["id", p.id],
    ["tradable", String(p.tradable)],
    ["buy", p.buy],
    ["sell", p.sell],
    ["prices", p.price_pinned ? "pinned (set by hand)" : "from the feed"],
    ["price_at", p.price_at],
    ["min_volume", p.min_volume],
    ["max_volume", p.max_volume],
    ["lifetime_s", String(p.lifetime_s)],
    ["fee_rate", p.fee_rate],
  ]);
}

export function formatPartnerPair(p: AdminPartnerPair): string {
  return formatRecord([
    ["partner", p.partner_id],
    ["pair", p.pair_id],
    ["available", String(p.available)],
    ["fee_rate", p.fee_rate ?? "(the partner's default, else the pair's)"],
  ]);
}

export function formatPartnerFees(partnerId: string, f: AdminPartnerFees): string {
  return formatRecord([
    ["partner", partnerId],
    ["fee_rate", f.fee_rate ?? "(each pair's own rate)"],
    ["vat_percentage", f.vat_percentage ?? "(none)"],
  ]);
}

/** One line per difference: the account or order it concerns, then the recorded and posted figures. */
export function formatLedgerDifferences(differences: readonly LedgerDifference[]): string {
  return differences.map((d) => clean(ledgerLine(d))).join("\n");
}

function ledgerLine(d: LedgerDifference): string {
  const recorded = d.recorded ?? "0";
  const posted = d.from_postings ?? "0";
  switch (d.kind) {
    case "account_balance":
      return `account ${d.account ?? `#${d.account_id}`}: recorded ${recorded}, from postings ${posted}`;
    case "order_unbalanced":
      return `order ${d.order_id} ${d.asset_id}: recorded 0, from postings ${posted} (an order's postings sum to 0)`;
    case "asset_unbalanced":
      return `asset ${d.asset_id}: account balances sum to ${recorded}, not 0`;
  }
  return `${d.kind}: ${JSON.stringify(d)}`;
}
