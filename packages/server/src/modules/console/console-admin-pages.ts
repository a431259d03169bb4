// The console's partner and catalog pages as HTML text (server-rendered, every value escaped).
// Each form posts to the admin API's own route (assets/console.js), so the page, the API and the
// CLI share one implementation and one role check; a role that may not change something sees no
// form at all.

import type { AuditEntry } from "../audit/index.ts";
import type { OperatorView } from "../operators/index.ts";
import type { PartnerKeyView, PartnerView } from "../partners/index.ts";
import type { AdminPartnerPairView } from "../trading/index.ts";
import { auditTable, esc, page } from "./console-pages.ts";

type Session = { operator: OperatorView; csrf: string };

const readOnly = (what: string) => `<p class="note">Your role may read ${what} but not change it.</p>`;

/** A partner's allow-list as shown: an empty one admits nobody (docs/reference.md), never "any". */
function allowListText(allowed: readonly string[]): string {
  return allowed.length === 0 ? "none: every signed request is refused" : allowed.join(", ");
}

export function partnersPage(session: Session, partners: PartnerView[], mayChange: boolean): string {
  const rows = partners
    .map(
      (p) => `<tr><td><a href="/console/partners/${esc(p.id)}">${esc(p.name)}</a></td><td>${esc(p.id)}</td>
<td>${p.active ? "yes" : "no"}</td><td>${p.has_public_key ? "yes" : "no"}</td>
<td>${esc(allowListText(p.allowed_ips))}</td><td>${esc(p.created_at)}</td></tr>`,
    )
    .join("");
  const form = mayChange
    ? `<h2>New partner</h2><form data-api="/admin/partners" data-lists="allowed_ips" data-nulls="public_key_pem" data-next-result="/console/partners/{id}" class="card" id="partner-create">
<label>Name <input name="name" required maxlength="255" size="40"></label>
<label>Allowed IP addresses or CIDR ranges (one a line; an empty list admits nobody) <textarea name="allowed_ips" rows="3" cols="40"></textarea></label>
<label>Ed25519 public key, PEM (optional; keys can be added later) <textarea name="public_key_pem" rows="4" cols="70"></textarea></label>
<p><button type="submit">Create partner</button></p><p role="status"></p></form>`
    : readOnly("partners");
  return page(
    "Partners",
    `<table><thead><tr><th>Name</th><th>Id</th><th>Active</th><th>Key</th><th>Allowed IPs</th><th>Created</th></tr></thead>
<tbody>${rows === "" ? '<tr><td colspan="6">No partner yet.</td></tr>' : rows}</tbody></table>${form}`,
    session,
  );
}

export interface PartnerFees {
  fee_rate: string | null;
  vat_percentage: string | null;
}

export function partnerPage(
  session: Session,
  p: PartnerView,
  keys: PartnerKeyView[],
  fees: PartnerFees,
  pairs: { ids: string[]; own: AdminPartnerPairView[] },
  history: AuditEntry[],
  mayChange: boolean,
): string {
  const api = `/admin/partners/${esc(p.id)}`;
  const budgets = (["reads", "writes", "quotes"] as const).map((k) => {
    const b = p.rate_limits[k];
    return [k, `${b.per_minute} a minute${b.default ? " (default)" : ""}`] as const;
  });
  const fields: [string, unknown][] = [
    ["Id", p.id],
    ["Name", p.name],
    ["Active", p.active ? "yes" : "no"],
    ["Allowed IPs", allowListText(p.allowed_ips)],
    ...budgets.map(([k, v]): [string, unknown] => [`Budget: ${k}`, v]),
    ["Fee rate (default for its pairs)", fees.fee_rate ?? "— (each pair's own)"],
    ["VAT percentage", fees.vat_percentage ?? "— (none)"],
    ["Created at", p.created_at],
    ["Updated at", p.updated_at],
  ];
  const record = `<table>${fields.map(([k, v]) => `<tr><th scope="row">${esc(k)}</th><td>${esc(v)}</td></tr>`).join("")}</table>`;
  const keyRows = keys
    .map(
      (k) => `<tr><td>${esc(k.label)}</td><td>${esc(k.id)}</td><td>${k.active ? "active" : "retired"}</td>
<td>${esc(k.created_at)}</td><td>${esc(k.retired_at ?? "")}</td><td>${
        mayChange && k.active
          ? `<form data-api="${api}/keys/${esc(k.id)}" data-method="DELETE" class="inline"><button type="submit" aria-label="Retire key ${esc(k.label)}">Retire</button><span role="status"></span></form>`
          : ""
      }</td></tr>`,
    )
    .join("");
  const keysTable = `<table id="keys"><thead><tr><th>Label</th><th>Id</th><th>State</th><th>Added</th><th>Retired</th><th></th></tr></thead>
<tbody>${keyRows === "" ? '<tr><td colspan="6">No key.</td></tr>' : keyRows}</tbody></table>`;
  const ownRows = pairs.own
    .map(
      (o) =>
        `<tr><td>${esc(o.pair_id)}</td><td>${o.available ? "yes" : "no"}</td><td>${esc(o.fee_rate ?? "— (default)")}</td></tr>`,
    )
    .join("");
  const pairsTable = `<table id="partner-pairs"><thead><tr><th>Pair</th><th>Available</th><th>Fee rate</th></tr></thead>
<tbody>${ownRows === "" ? '<tr><td colspan="3">Every pair available, at the default rates.</td></tr>' : ownRows}</tbody></table>`;
  const pairOptions = pairs.ids.map((id) => `<option value="${esc(id)}">${esc(id)}</option>`).join("");
  const limitInput = (k: "reads" | "writes" | "quotes") =>
    `<label>${k} a minute <input name="${k}" type="number" min="1" size="8" value="${p.rate_limits[k].default ? "" : esc(p.rate_limits[k].per_minute)}" placeholder="default"></label>`;
  const forms = mayChange
    ? `<h2>Add a key</h2><form data-api="${api}/keys" class="card" id="key-add">
<label>Label <input name="label" required maxlength="100" size="30"></label>
<label>Ed25519 public key, PEM <textarea name="public_key_pem" required rows="4" cols="70"></textarea></label>
<p><button type="submit">Add key</button></p><p role="status"></p></form>
<h2>IP allow-list</h2><form data-api="${api}/ips" data-method="PUT" data-lists="allowed_ips" class="card">
<label>Allowed IP addresses or CIDR ranges (one a line; an empty list admits nobody) <textarea name="allowed_ips" rows="4" cols="40">${esc(p.allowed_ips.join("\n"))}</textarea></label>
<p><button type="submit">Replace allow-list</button></p><p role="status"></p></form>
<h2>Rate-limit budgets</h2><form data-api="${api}/limits" data-method="PUT" data-integers="reads,writes,quotes" class="inline card">
${limitInput("reads")}${limitInput("writes")}${limitInput("quotes")}
<button type="submit">Set budgets</button><span role="status"></span></form>
<h2>Fees and VAT</h2><form data-api="${api}/fees" data-method="PUT" data-nulls="fee_rate,vat_percentage" class="inline card">
<label>Default fee rate (0 to 1; empty: each pair's own) <input name="fee_rate" value="${esc(fees.fee_rate ?? "")}" size="12"></label>
<label>VAT percentage (empty: none) <input name="vat_percentage" value="${esc(fees.vat_percentage ?? "")}" size="10"></label>
<button type="submit">Set fees</button><span role="status"></span></form>
<h2>A pair for this partner</h2><form data-api="${api}/pairs/" data-method="PUT" data-path="pair_id" data-booleans="available" data-nulls="fee_rate" class="inline card" id="partner-pair">
<label>Pair <select name="pair_id">${pairOptions}</select></label>
<label class="check"><input type="checkbox" name="available" value="true" checked> available</label>
<label>Its fee rate (empty: the default) <input name="fee_rate" size="10"></label>
<button type="submit">Set pair</button><span role="status"></span></form>
<h2>${p.active ? "Disable" : "Enable"}</h2><form data-api="${api}/active" data-method="PUT" data-booleans="active" class="inline card">
<input type="hidden" name="active" value="${p.active ? "false" : "true"}">
<label>Reason (on the audit trail) <input name="reason" required maxlength="1000" size="50"></label>
<button type="submit">${p.active ? "Disable partner" : "Enable partner"}</button><span role="status"></span></form>`
    : readOnly("this partner");
  return page(
    `Partner ${p.name}`,
    `${record}<h2>Public keys</h2>${keysTable}<h2>Pairs of its own</h2>${pairsTable}${forms}<h2>History</h2>${auditTable(history)}`,
    session,
  );
}
