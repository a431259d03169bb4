// The client: one request sender (signing, timeouts, retries) shared by every resource.

import { type CounterpartOptions, resolveConfig } from "./config.ts";
import { RequestSender } from "./request-sender.ts";
import { Balances } from "./resources/balances.ts";
import { AssetPairs, Assets, Countries } from "./resources/catalog.ts";
import { Clients } from "./resources/clients.ts";
import { Documents } from "./resources/documents.ts";
import { Events, Webhooks } from "./resources/events.ts";
import { Deposits, Withdrawals } from "./resources/funding.ts";
import { Orders } from "./resources/orders.ts";
import { Quotes } from "./resources/quotes.ts";

/**
 * A Counterpart partner client.
 *
 * ```ts
 * const counterpart = new Counterpart({ baseUrl, partnerId, privateKey: pemText });
 * const { order } = await counterpart.deposits.create({ partner_client_id: "c-1", asset_id: "AED", amount: "100", partner_order_ref: "dep-1" });
 * ```
 *
 * Construction checks every option and throws a TypeError or RangeError that names the fix.
 */
export class Counterpart {
  /** Public (unsigned): the asset catalog. */
  readonly assets: Assets;
  /** Public (unsigned): the supported countries. */
  readonly countries: Countries;
  readonly assetPairs: AssetPairs;
  readonly balances: Balances;
  readonly quotes: Quotes;
  readonly deposits: Deposits;
  readonly withdrawals: Withdrawals;
  readonly orders: Orders;
  readonly clients: Clients;
  readonly documents: Documents;
  /** The event feed (beyond the contract). */
  readonly events: Events;
  /** Webhook endpoints, and the check of a delivery's signature (beyond the contract). */
  readonly webhooks: Webhooks;

  constructor(options: CounterpartOptions) {
    const sender = new RequestSender(resolveConfig(options));
    this.assets = new Assets(sender);
    this.countries = new Countries(sender);
    this.assetPairs = new AssetPairs(sender);
    this.balances = new Balances(sender);
    this.quotes = new Quotes(sender);
    this.deposits = new Deposits(sender);
    this.withdrawals = new Withdrawals(sender);
    this.orders = new Orders(sender);
    this.clients = new Clients(sender);
    this.events = new Events(sender);
    this.webhooks = new Webhooks(sender);
    this.documents = new Documents(sender);
  }
}
