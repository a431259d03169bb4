// The console's pages as HTML text (server-rendered; the only script is assets/console.js). Every
// value is escaped; the pages link only to this listener.

import type { AuditEntry } from "../audit/index.ts";
import type { ClientView } from "../clients/index.ts";
import type { OperatorView } from "../operators/index.ts";

export function esc(value: unknown): string {
  return String(value ?? "")
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}

export function page(
  title: string,
  body: string,
  session: { operator: OperatorView; csrf: string } | null,
): string {
  const header =
    session === null
      ? "<header><strong>Counterpart back office</strong></header>"
      : `<header><strong>Counterpart back office</strong>
<nav><a href="/console/clients">Clients</a> · <a href="/console/orders">Orders</a> · <a href="/console/partners">Partners</a> · <a href="/console/catalog">Catalog</a> · <a href="/console/ledger">Ledger</a> · <a href="/console/audit">Audit trail</a></nav>
<span class="who">${esc(session.operator.email)} (${esc(session.operator.role)})</span>
<form data-api="/admin/session" data-method="DELETE" data-next="/console/sign-in"><button type="submit">Sign out</button><span role="status"></span></form>
</header>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="${esc(session?.csrf ?? "")}">
<title>${esc(title)} · Counterpart</title>
<link rel="stylesheet" href="/console/assets/console.css"><script src="/console/assets/console.js" defer></script></head>
<body>${header}<main><h1>${esc(title)}</h1>
${body}</main></body></html>`;
}

export function signInPage(): string {
  return page(
    "Sign in",
    `<form data-api="/admin/session" data-next="/console/clients" class="card">
<label>E-mail address <input name="email" type="email" autocomplete="username" required autofocus></label>
<label>Password <input name="password" type="password" autocomplete="current-password" required></label>
<p><button type="submit">Sign in</button></p><p role="status"></p></form>`,
    null,
  );
}

export interface Pager {
  page: number;
  pageSize: number;
  total: number;
  href: (page: number) => string;
}

function pager(p: Pager): string {
  const last = Math.max(1, Math.ceil(p.total / p.pageSize));
  const prev = p.page > 1 ? `<a href="${esc(p.href(p.page - 1))}">← Newer</a>` : "";
  const next = p.page < last ? `<a href="${esc(p.href(p.page + 1))}">Older →</a>` : "";
  return `<div class="pager">${prev}<span>Page ${p.page} of ${last} (${p.total} in all)</span>${next}</div>`;
}

export const statuses = [
  "unverified",
  "under_review",
  "partially_verified",
  "docs_under_review",
  "verified",
  "not_supported",
  "under_age",
  "rejected",
] as const;

export function clientsPage(
  session: { operator: OperatorView; csrf: string },
  query: { q: string; partner: string; status: string },
  items: { partner_id: string; client: ClientView }[],
  p: Pager,
  error: string | null = null,
): string {
  const options = ["", ...statuses]
    .map(
      (s) =>
        `<option value="${s}"${s === query.status ? " selected" : ""}>${s === "" ? "any status" : s}</option>`,
    )
    .join("");
  const rows = items
    .map(
      ({ partner_id, client: c }) => `<tr>
<td><a href="/console/clients/${esc(partner_id)}/${encodeURIComponent(c.partner_client_id)}">${esc(c.partner_client_id)}</a></td>
<td>${esc(c.name ?? "")}</td><td>${esc(c.email)}</td><td>${esc(c.status)}</td><td>${c.active ? "yes" : "no"}</td>
<td>${esc(partner_id)}</td><td>${esc(c.created_at)}</td></tr>`,
    )
    .join("");
  return page(
    "Clients",
    `<form method="get" action="/console/clients" class="inline" role="search">
<label>Client id, e-mail, phone or government id <input name="q" value="${esc(query.q)}"></label>
<label>Partner id <input name="partner" value="${esc(query.partner)}" size="36"></label>
<label>Status <select name="status">${options}</select></label>
<button type="submit">Search</button></form>
${error === null ? "" : `<p role="alert" class="error">${esc(error)}</p>`}
<table><thead><tr><th>Client</th><th>Name</th><th>E-mail</th><th>Status</th><th>Active</th><th>Partner</th><th>Created</th></tr></thead>
<tbody>${rows === "" ? '<tr><td colspan="7">No client matches.</td></tr>' : rows}</tbody></table>${pager(p)}`,
    session,
  );
}

export function auditTable(entries: AuditEntry[]): string {
  const rows = entries
    .map(
      (e) => `<tr><td>${esc(e.at)}</td><td>${esc(e.actor.email ?? e.actor.kind)}</td><td>${esc(e.action)}</td>
<td>${esc(`${e.target_type}:${e.target_id}`)}</td><td>${esc(e.reason ?? "")}</td>
<td><pre>${esc(JSON.stringify(e.before))}</pre></td><td><pre>${esc(JSON.stringify(e.after))}</pre></td></tr>`,
    )
    .join("");
  return `<table><thead><tr><th>When</th><th>Who</th><th>Action</th><th>Target</th><th>Reason</th><th>Before</th><th>After</th></tr></thead>
<tbody>${rows === "" ? '<tr><td colspan="7">Nothing recorded.</td></tr>' : rows}</tbody></table>`;
}

export function clientPage(
  session: { operator: OperatorView; csrf: string },
  partnerId: string,
  c: ClientView,
  history: AuditEntry[],
  mayChange: boolean,
  records = "",
): string {
  const api = `/admin/partners/${esc(partnerId)}/clients/${encodeURIComponent(c.partner_client_id)}`;
  const fields: [string, unknown][] = [
    ["Partner", partnerId],
    ["Client id", c.partner_client_id],
    ["Name", c.name],
    ["Status", c.status],
    ["Active", c.active ? "yes" : "no"],
    ["E-mail", c.email],
    ["Phone", c.phone],
    ["Government id", c.government_id_number],
    ["Verified at", c.verified_at ?? "—"],
    ["Created at", c.created_at],
  ];
  const record = `<table>${fields.map(([k, v]) => `<tr><th scope="row">${esc(k)}</th><td>${esc(v)}</td></tr>`).join("")}</table>`;
  const options = statuses
    .map((s) => `<option value="${s}"${s === c.status ? " selected" : ""}>${s}</option>`)
    .join("");
  const forms = mayChange
    ? `<h2>Change status</h2><form data-api="${api}/status" data-method="PUT" class="inline card" id="status-form">
<label>New status <select name="status">${options}</select></label>
<label>Reason (on the audit trail) <input name="reason" required maxlength="1000" size="50"></label>
<button type="submit">Change status</button><span role="status"></span></form>
<h2>${c.active ? "Deactivate" : "Activate"}</h2><form data-api="${api}/active" data-method="PUT" data-booleans="active" class="inline card">
<input type="hidden" name="active" value="${c.active ? "false" : "true"}">
<label>Reason <input name="reason" required maxlength="1000" size="50"></label>
<button type="submit">${c.active ? "Deactivate" : "Activate"}</button><span role="status"></span></form>`
    : "<p>Your role may read this client but not change it.</p>";
  return page(
    `Client ${c.partner_client_id}`,
    `${record}${forms}${records}<h2>History</h2>${auditTable(history)}`,
    session,
  );
}

/** A page's 400 for a query it cannot read (a page without filters of its own: its form is not shown). */
export function badRequestPage(
  session: { operator: OperatorView; csrf: string } | null,
  message: string,
): string {
  return page("Bad request", `<p role="alert" class="error">${esc(message)}</p>`, session);
}

export function notFoundPage(session: { operator: OperatorView; csrf: string }): string {
  return page("Not found", "<p>No such record.</p>", session);
}
