// Read use cases on the catalog, in wire shape.

import type { CredentialWitness } from "../../db/credential-witness.ts";
import type { Db } from "../../db/database.ts";
import * as store from "./catalog-store.ts";
import { assetView, type CountryView, pairView } from "./catalog-views.ts";

export class CatalogService {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  async listAssets() {
    return (await store.listAssets(this.#db)).map(assetView);
  }

  async getAsset(id: string) {
    const a = await store.findAsset(this.#db, id);
    return a ? assetView(a) : null;
  }

  async listCountries(): Promise<CountryView[]> {
    return store.listCountries(this.#db);
  }

  /** A country the service supports; restricted ones are absent from the public catalog. */
  async getCountry(id: string): Promise<CountryView | null> {
    const c = await store.findCountry(this.#db, id);
    return c?.supported ? { id: c.id, name: c.name } : null;
  }

  /** One statement, which also carries the partner's credentials when given a witness. */
  async listPairs(partnerId: string, witness?: CredentialWitness) {
    return (await store.listPairsForPartner(this.#db, partnerId, witness)).map(pairView);
  }

  async getPair(partnerId: string, id: string, witness?: CredentialWitness) {
    const p = await store.findPairForPartner(this.#db, partnerId, id, witness);
    return p ? pairView(p) : null;
  }
}
