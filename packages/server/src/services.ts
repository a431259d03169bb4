// Composition root: every service built once, with its dependencies passed explicitly.

import type { Config } from "./config/config.ts";
import type { DatabaseHandle } from "./db/database.ts";
import { CatalogService } from "./modules/catalog/index.ts";
import { FundingService } from "./modules/funding/index.ts";
import { BalancesService } from "./modules/ledger/index.ts";
import { OrdersService } from "./modules/orders/index.ts";
import { PartnerAuthenticator, PartnersService } from "./modules/partners/index.ts";
import { TradingService } from "./modules/trading/index.ts";
import type { Clock } from "./platform/clock.ts";
import type { Random } from "./platform/random.ts";

export interface Services {
  readonly config: Config;
  readonly database: DatabaseHandle;
  readonly clock: Clock;
  readonly random: Random;
  readonly authenticator: PartnerAuthenticator;
  readonly partners: PartnersService;
  readonly catalog: CatalogService;
  readonly funding: FundingService;
  readonly balances: BalancesService;
  readonly orders: OrdersService;
  readonly trading: TradingService;
}

export function buildServices(deps: {
  config: Config;
  database: DatabaseHandle;
  clock: Clock;
  random: Random;
}): Services {
  const { db } = deps.database;
  return {
    ...deps,
    authenticator: new PartnerAuthenticator(db, deps.clock),
    partners: new PartnersService(db, deps.clock, deps.random),
    catalog: new CatalogService(db),
    funding: new FundingService(db),
    balances: new BalancesService(db),
    orders: new OrdersService(db),
    trading: new TradingService(db, deps.clock, deps.random, {
      priceStaleAfterSeconds: deps.config.priceStaleAfterSeconds,
    }),
  };
}
