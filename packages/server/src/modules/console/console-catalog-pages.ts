// The console's catalog pages as HTML text: assets and pairs (tradable, volume limits, quote
// lifetime, fee rate), and a pair's page with its prices, the feed's last tick, a pin with a
// reason and the hand-back to the feed. Forms post to the admin API's own routes.

import { formatDecimal } from "@counterpart/protocol";
import type { AuditEntry } from "../audit/index.ts";
import type { FeedTick } from "../catalog/index.ts";
import type { OperatorView } from "../operators/index.ts";
import type { AdminPairView } from "../trading/index.ts";
import { auditTable, esc, page } from "./console-pages.ts";

type Session = { operator: OperatorView; csrf: string };

interface AssetRow {
  id: string;
  type: string;
  name_en: string;
  decimal_places: number;
  published: boolean;
  depositable: boolean;
  withdrawable: boolean;
}

const yes = (b: boolean) => (b ? "yes" : "no");
const readOnly = (what: string) => `<p class="note">Your role may read ${what} but not change it.</p>`;
const check = (name: string, label: string, on: boolean) =>
  `<label class="check"><input type="checkbox" name="${name}" value="true"${on ? " checked" : ""}> ${esc(label)}</label>`;

export function catalogPage(
  session: Session,
  assets: AssetRow[],
  pairs: AdminPairView[],
  mayChange: boolean,
): string {
  const assetRows = assets
    .map(
      (
        a,
      ) => `<tr><td>${esc(a.id)}</td><td>${esc(a.type)}</td><td>${esc(a.name_en)}</td><td>${a.decimal_places}</td>
<td>${yes(a.published)}</td><td>${yes(a.depositable)}</td><td>${yes(a.withdrawable)}</td></tr>`,
    )
    .join("");
  const pairRows = pairs
    .map(
      (
        p,
      ) => `<tr><td><a href="/console/pairs/${encodeURIComponent(p.id)}">${esc(p.id)}</a></td><td>${yes(p.tradable)}</td>
<td class="num">${esc(p.buy)}</td><td class="num">${esc(p.sell)}</td><td>${p.price_pinned ? "pinned" : "feed"}</td><td>${esc(p.price_at)}</td>
<td class="num">${esc(p.min_volume)} – ${esc(p.max_volume)}</td><td>${p.lifetime_s} s</td><td class="num">${esc(p.fee_rate)}</td></tr>`,
    )
    .join("");
  const forms = mayChange
    ? `<h2>Add or change an asset</h2><form data-api="/admin/assets/" data-method="PUT" data-path="id" data-booleans="published,depositable,withdrawable" data-integers="decimal_places" data-omit-empty="usd_rate" class="inline card" id="asset-form">
<label>Asset id <input name="id" required pattern="[A-Z0-9]{2,10}" size="10"></label>
<label>Type <select name="type"><option value="crypto">crypto</option><option value="fiat">fiat</option></select></label>
<label>English name <input name="name_en" required maxlength="255"></label>
<label>Decimal places <input name="decimal_places" type="number" min="0" max="8" value="8" required></label>
<label>USD rate (empty: unchanged) <input name="usd_rate" size="12"></label>
${check("published", "published", false)}${check("depositable", "depositable", false)}${check("withdrawable", "withdrawable", false)}
<button type="submit">Save asset</button><span role="status"></span></form>
<h2>Add a pair</h2><form data-api="/admin/pairs/" data-method="PUT" data-path="id" data-omit-empty="min_volume,max_volume,lifetime_s,fee_rate" data-integers="lifetime_s" data-next-result="/console/pairs/{id}" class="inline card" id="pair-form">
<label>Pair id (BASE-QUOTE) <input name="id" required pattern="[A-Z0-9]{2,10}-[A-Z0-9]{2,10}" size="12"></label>
<label>Minimum volume <input name="min_volume" size="10"></label>
<label>Maximum volume <input name="max_volume" size="10"></label>
<label>Quote lifetime (s) <input name="lifetime_s" type="number" min="1" max="3600" size="6"></label>
<label>Fee rate <input name="fee_rate" size="8"></label>
<button type="submit">Add pair</button><span role="status"></span></form>`
    : readOnly("the catalog");
  return page(
    "Catalog",
    `<h2>Assets</h2><table><thead><tr><th>Id</th><th>Type</th><th>Name</th><th>Places</th><th>Published</th><th>Depositable</th><th>Withdrawable</th></tr></thead>
<tbody>${assetRows === "" ? '<tr><td colspan="7">No asset.</td></tr>' : assetRows}</tbody></table>
<h2>Pairs</h2><table id="pairs"><thead><tr><th>Pair</th><th>Tradable</th><th>Buy</th><th>Sell</th><th>Price from</th><th>Priced at</th><th>Volume</th><th>Quote lifetime</th><th>Fee rate</th></tr></thead>
<tbody>${pairRows === "" ? '<tr><td colspan="9">No pair.</td></tr>' : pairRows}</tbody></table>${forms}`,
    session,
  );
}

export function pairPage(
  session: Session,
  p: AdminPairView,
  tick: FeedTick | null,
  hasFeed: boolean,
  history: AuditEntry[],
  mayChange: boolean,
): string {
  const api = `/admin/pairs/${encodeURIComponent(p.id)}`;
  const feedText = !hasFeed
    ? "no price feed runs (PRICE_FEED=manual)"
    : tick === null
      ? "none yet in this process"
      : `buy ${formatDecimal(tick.buy)}, sell ${formatDecimal(tick.sell)} at ${new Date(tick.atMs).toISOString()}`;
  const fields: [string, unknown][] = [
    ["Pair", p.id],
    ["Tradable", yes(p.tradable)],
    ["Buy", p.buy],
    ["Sell", p.sell],
    ["Price from", p.price_pinned ? "pinned by an operator" : "the feed"],
    ["Priced at", p.price_at],
    ["Feed's last tick", feedText],
    ["Volume", `${p.min_volume} – ${p.max_volume}`],
    ["Quote lifetime", `${p.lifetime_s} s`],
    ["Fee rate", p.fee_rate],
  ];
  const record = `<table>${fields.map(([k, v]) => `<tr><th scope="row">${esc(k)}</th><td>${esc(v)}</td></tr>`).join("")}</table>`;
  const forms = mayChange
    ? `<h2>Pin a price</h2><form data-api="${api}/price" data-method="PUT" class="inline card" id="pin-form">
<label>Buy <input name="buy" required value="${esc(p.buy)}" size="14"></label>
<label>Sell <input name="sell" required value="${esc(p.sell)}" size="14"></label>
<label>Reason (on the audit trail) <input name="reason" required maxlength="1000" size="40"></label>
<button type="submit">Pin price</button><span role="status"></span></form>
${
  p.price_pinned
    ? `<h2>Hand back to the feed</h2><form data-api="${api}/resume" class="inline card"><button type="submit">Resume feed</button><span role="status"></span></form>`
    : ""
}
<h2>Settings</h2><form data-api="${api}" data-method="PUT" data-booleans="tradable" data-integers="lifetime_s" class="inline card" id="pair-settings">
${check("tradable", "tradable", p.tradable)}
<label>Minimum volume <input name="min_volume" required value="${esc(p.min_volume)}" size="12"></label>
<label>Maximum volume <input name="max_volume" required value="${esc(p.max_volume)}" size="12"></label>
<label>Quote lifetime (s) <input name="lifetime_s" type="number" min="1" max="3600" required value="${p.lifetime_s}" size="6"></label>
<label>Fee rate <input name="fee_rate" required value="${esc(p.fee_rate)}" size="10"></label>
<button type="submit">Save settings</button><span role="status"></span></form>`
    : readOnly("this pair");
  return page(`Pair ${p.id}`, `${record}${forms}<h2>History</h2>${auditTable(history)}`, session);
}
