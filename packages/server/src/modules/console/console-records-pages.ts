// The console's record pages (docs/decisions.md, "Back office records"): orders filtered and paged
// by keyset, an order with its postings, the ledger, a client's balances, orders and documents,
// and the audit trail with its filters. Every value is escaped.

// The filters offer the partner interface's own lists, never a copy.
import { orderSources, orderStatuses, orderTypes } from "@counterpart/protocol";
import type { AuditEntry } from "../audit/index.ts";
import type { LedgerDifference } from "../ledger/index.ts";
import type { OperatorView } from "../operators/index.ts";
import type {
  AssetTotalRecord,
  ClientBalanceRecord,
  Cursor,
  HouseAccountRecord,
  OrderRecord,
  PostingRecord,
} from "../records/index.ts";
import { esc, page } from "./console-pages.ts";

type Session = { operator: OperatorView; csrf: string };

function select(name: string, label: string, values: readonly string[], chosen: string): string {
  const options = ["", ...values]
    .map((v) => `<option value="${v}"${v === chosen ? " selected" : ""}>${v === "" ? "any" : v}</option>`)
    .join("");
  return `<label>${esc(label)} <select name="${name}">${options}</select></label>`;
}

function input(name: string, label: string, value: string, extra = ""): string {
  return `<label>${esc(label)} <input name="${name}" value="${esc(value)}"${extra}></label>`;
}

/** The link to the next (older) page, keeping the filters: keyset paging has no page count. */
function nextLink(base: string, query: Record<string, string>, next: Cursor | null, first: boolean): string {
  const older =
    next === null
      ? "<span>No older entries.</span>"
      : `<a href="${esc(`${base}?${new URLSearchParams({ ...query, after_at: next.at, after_id: String(next.id) })}`)}">Older →</a>`;
  const newest = first ? "" : `<a href="${esc(`${base}?${new URLSearchParams(query)}`)}">← Newest</a>`;
  return `<div class="pager">${newest}${older}</div>`;
}

const money = (amount: string | null, asset: string | null) =>
  amount === null ? "" : `${esc(amount)} ${esc(asset ?? "")}`;

function ordersTable(items: OrderRecord[], showPartner = true): string {
  const rows = items
    .map(
      (
        o,
      ) => `<tr><td><a href="/console/orders/${o.id}">${o.id}</a></td><td class="nw">${esc(o.created_at)}</td>
<td class="nw"><a href="/console/clients/${esc(o.partner_id)}/${encodeURIComponent(o.partner_client_id)}">${esc(o.partner_client_id)}</a></td>
<td>${esc(o.type)}</td><td>${esc(o.source)}</td><td>${esc(o.status)}</td>
<td class="nw num">${money(o.credit, o.credit_asset_id)}</td><td class="nw num">${money(o.debit, o.debit_asset_id)}</td>${showPartner ? `<td class="nw">${esc(o.partner_id)}</td>` : ""}</tr>`,
    )
    .join("");
  const partner = showPartner ? "<th>Partner</th>" : "";
  return `<table><thead><tr><th>Order</th><th>Created</th><th>Client</th><th>Type</th><th>Source</th><th>Status</th><th>Credit</th><th>Debit</th>${partner}</tr></thead>
<tbody>${rows === "" ? `<tr><td colspan="${showPartner ? 9 : 8}">No order matches.</td></tr>` : rows}</tbody></table>`;
}

export interface OrdersQuery {
  partner: string;
  client: string;
  type: string;
  source: string;
  status: string;
  from: string;
  to: string;
}

export function ordersPage(
  session: Session,
  query: OrdersQuery,
  items: OrderRecord[],
  next: Cursor | null,
  first: boolean,
  error: string | null,
): string {
  return page(
    "Orders",
    `<form method="get" action="/console/orders" class="inline" role="search">
${input("partner", "Partner id", query.partner, ' size="36"')}
${input("client", "Client id (with the partner)", query.client)}
${select("type", "Type", orderTypes, query.type)}
${select("source", "Source", orderSources, query.source)}
${select("status", "Status", orderStatuses, query.status)}
${input("from", "Created from", query.from, ' placeholder="2026-11-01T00:00:00Z"')}
${input("to", "Created to", query.to, ' placeholder="2026-11-30T23:59:59Z"')}
<button type="submit">Filter</button></form>
${error === null ? "" : `<p role="alert" class="error">${esc(error)}</p>`}
${ordersTable(items)}${nextLink("/console/orders", { ...query }, next, first)}`,
    session,
  );
}

export function orderPage(session: Session, o: OrderRecord, postings: PostingRecord[]): string {
  const fields: [string, unknown][] = [
    ["Order", o.id],
    ["Partner", o.partner_id],
    ["Partner's reference", o.partner_order_ref ?? "—"],
    ["Type", o.type],
    ["Source", o.source],
    ["Status", o.status],
    ["Price", o.price ?? "—"],
    ["Credit", o.credit === null ? "—" : `${o.credit} ${o.credit_asset_id}`],
    ["Debit", o.debit === null ? "—" : `${o.debit} ${o.debit_asset_id}`],
    ["Fee", `${o.fee} ${o.fee_asset_id}`],
    ["VAT", `${o.vat} ${o.fee_asset_id}`],
    ["Created at", o.created_at],
    ["Last transition", o.transitioned_at],
  ];
  const record = `<table>${fields.map(([k, v]) => `<tr><th scope="row">${esc(k)}</th><td>${esc(v)}</td></tr>`).join("")}
<tr><th scope="row">Client</th><td><a href="/console/clients/${esc(o.partner_id)}/${encodeURIComponent(o.partner_client_id)}">${esc(o.partner_client_id)}</a></td></tr></table>`;
  const rows = postings
    .map(
      (p) =>
        `<tr><td>${p.id}</td><td>${esc(p.account)}</td><td>${p.account_id}</td><td>${esc(p.asset_id)}</td><td class="num">${esc(p.amount)}</td></tr>`,
    )
    .join("");
  return page(
    `Order ${o.id}`,
    `${record}<h2>Ledger postings</h2>
<table id="postings"><thead><tr><th>Posting</th><th>Account</th><th>Account id</th><th>Asset</th><th>Amount</th></tr></thead>
<tbody>${rows === "" ? '<tr><td colspan="5">No postings (the order moved no money).</td></tr>' : rows}</tbody></table>`,
    session,
  );
}

export function ledgerPage(
  session: Session,
  house: HouseAccountRecord[],
  totals: AssetTotalRecord[],
  check: { differences: LedgerDifference[]; ms: number } | null,
): string {
  const checkPart =
    check === null
      ? `<form method="get" action="/console/ledger"><input type="hidden" name="check" value="1">
<p>The check recomputes every balance from all postings; it reads the whole ledger, so it runs only when asked.</p>
<button type="submit">Run the ledger check</button></form>`
      : check.differences.length === 0
        ? `<p role="status" class="ok">The ledger is consistent: every balance is the sum of its postings, every order and every asset sums to zero (checked in ${check.ms} ms).</p>`
        : `<p role="alert" class="error">${check.differences.length} difference(s) found (checked in ${check.ms} ms).</p>
<table><thead><tr><th>Kind</th><th>Account / order</th><th>Asset</th><th>Recorded</th><th>From postings</th></tr></thead><tbody>${check.differences
            .map(
              (d) =>
                `<tr><td>${esc(d.kind)}</td><td>${esc(d.account ?? d.order_id ?? "")}</td><td>${esc(d.asset_id)}</td><td>${esc(d.recorded ?? "")}</td><td>${esc(d.from_postings ?? "")}</td></tr>`,
            )
            .join("")}</tbody></table>`;
  const houseRows = house
    .map(
      (h) =>
        `<tr><td>${esc(h.partner_name)}</td><td>${esc(h.kind)}</td><td>${esc(h.asset_id)}</td><td class="num">${esc(h.balance)}</td><td>${h.slots}</td></tr>`,
    )
    .join("");
  const totalRows = totals
    .map(
      (t) =>
        `<tr><td>${esc(t.asset_id)}</td><td class="num">${esc(t.clients)}</td><td class="num">${esc(t.house)}</td><td class="num">${esc(t.total)}</td></tr>`,
    )
    .join("");
  return page(
    "Ledger",
    `<h2>Ledger check</h2>${checkPart}
<h2>Totals per asset</h2>
<table id="totals"><thead><tr><th>Asset</th><th>Clients hold</th><th>House accounts</th><th>Sum (zero when balanced)</th></tr></thead>
<tbody>${totalRows === "" ? '<tr><td colspan="4">No accounts yet.</td></tr>' : totalRows}</tbody></table>
<h2>House accounts</h2>
<table id="house"><thead><tr><th>Partner</th><th>Account</th><th>Asset</th><th>Balance</th><th>Slots</th></tr></thead>
<tbody>${houseRows === "" ? '<tr><td colspan="5">No house accounts yet.</td></tr>' : houseRows}</tbody></table>`,
    session,
  );
}

export interface ClientDocumentItem {
  id: number;
  type: string;
  created_at: string;
  front_type: string;
  back_type: string | null;
}

function documentView(documentId: number, side: "front" | "back", contentType: string): string {
  const src = `/console/documents/${documentId}/${side}`;
  const label = `${side} of document ${documentId}`;
  // Images inline; a PDF in a frame of this origin (the file route's own CSP sandboxes it: a
  // sandbox attribute here would keep the browser's PDF viewer from showing it at all).
  return contentType === "application/pdf"
    ? `<iframe src="${src}" title="${esc(label)}" loading="lazy"></iframe><a href="${src}">Open the ${esc(label)}</a>`
    : `<a href="${src}"><img src="${src}" alt="${esc(label)}" loading="lazy"></a>`;
}

/** The client page's records: balances, the latest orders (the rest on the orders page), documents. */
export function clientRecords(
  partnerId: string,
  partnerClientId: string,
  balances: ClientBalanceRecord[],
  orders: OrderRecord[],
  more: boolean,
  documents: ClientDocumentItem[],
): string {
  const balanceRows = balances
    .map(
      (b) =>
        `<tr><td>${esc(b.asset_id)}</td><td class="num">${esc(b.balance)}</td><td class="num">${esc(b.held)}</td><td class="num">${esc(b.available)}</td></tr>`,
    )
    .join("");
  const allOrders = `/console/orders?${new URLSearchParams({ partner: partnerId, client: partnerClientId })}`;
  const docs = documents
    .map(
      (d) => `<li><strong>${esc(d.type)}</strong> (document ${d.id}, ${esc(d.created_at)})
<div class="doc">${documentView(d.id, "front", d.front_type)}${d.back_type === null ? "" : documentView(d.id, "back", d.back_type)}</div></li>`,
    )
    .join("");
  return `<h2>Balances</h2>
<table id="balances"><thead><tr><th>Asset</th><th>Balance</th><th>Held</th><th>Available</th></tr></thead>
<tbody>${balanceRows === "" ? '<tr><td colspan="4">No balance.</td></tr>' : balanceRows}</tbody></table>
<h2>Orders</h2>${ordersTable(orders, false)}
<p><a href="${esc(allOrders)}">${more ? "All of this client's orders →" : "This client's orders on the orders page"}</a></p>
<h2>Documents</h2>${docs === "" ? "<p>No documents.</p>" : `<ul class="documents">${docs}</ul>`}
<p class="note">Opening a document is recorded on the audit trail.</p>`;
}

export interface AuditQuery {
  actor: string;
  action: string;
  target_type: string;
  target: string;
  from: string;
  to: string;
}

export function auditFilterPage(
  session: Session,
  query: AuditQuery,
  table: string,
  next: Cursor | null,
  first: boolean,
  error: string | null,
): string {
  return page(
    "Audit trail",
    `<form method="get" action="/console/audit" class="inline" role="search">
${input("actor", "Actor (operator e-mail, token or system)", query.actor)}
${input("action", "Action", query.action, ' placeholder="client.status"')}
${input("target_type", "Target type", query.target_type, ' placeholder="client"')}
${input("target", "Target id", query.target)}
${input("from", "From", query.from, ' placeholder="2026-11-01T00:00:00Z"')}
${input("to", "To", query.to, ' placeholder="2026-11-30T23:59:59Z"')}
<button type="submit">Filter</button></form>
${error === null ? "" : `<p role="alert" class="error">${esc(error)}</p>`}
${table}${nextLink("/console/audit", { ...query }, next, first)}`,
    session,
  );
}

export type { AuditEntry };
