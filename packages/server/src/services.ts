// Composition root: every service built once, with its dependencies passed explicitly.

import path from "node:path";
import type { Config } from "./config/config.ts";
import type { DatabaseHandle } from "./db/database.ts";
import { CatalogService } from "./modules/catalog/index.ts";
import { ClientsService } from "./modules/clients/index.ts";
import { DocumentsService, FileUrlSigner } from "./modules/documents/index.ts";
import { FundingService } from "./modules/funding/index.ts";
import { BalancesService } from "./modules/ledger/index.ts";
import { OrdersService } from "./modules/orders/index.ts";
import { PartnerAuthenticator, PartnersService } from "./modules/partners/index.ts";
import { TradingService } from "./modules/trading/index.ts";
import type { Clock } from "./platform/clock.ts";
import { type FileStore, LocalFileStore } from "./platform/file-store.ts";
import type { Random } from "./platform/random.ts";
import { folderSecret } from "./sandbox.ts";

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
  readonly fileStore: FileStore;
  readonly clients: ClientsService;
  readonly documents: DocumentsService;
}

export function buildServices(deps: {
  config: Config;
  database: DatabaseHandle;
  clock: Clock;
  random: Random;
  /** Where document files go; the local folder `<dataDir>/files` when not given. */
  fileStore?: FileStore;
}): Services {
  const { db } = deps.database;
  const { config } = deps;
  const fileStore = deps.fileStore ?? new LocalFileStore(path.join(config.dataDir, "files"));
  // Read (or made, in the data folder) on first use only: a process that never signs a file link
  // writes nothing to the data folder.
  let fileUrlSecret: string | null = null;
  const signer = new FileUrlSigner(() => {
    fileUrlSecret ??= folderSecret(config.dataDir, "file-url-secret", config.fileUrlSecret);
    return fileUrlSecret;
  });
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
    fileStore,
    clients: new ClientsService(db, deps.clock, { legalAgeYears: config.legalAgeYears }),
    documents: new DocumentsService({ db, clock: deps.clock, random: deps.random, files: fileStore, signer }),
  };
}
