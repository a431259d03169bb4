// The catalog a fresh installation starts with (docs/operations.md). Seeding inserts what is missing
// and never overwrites what the operator changed.

import type { Db } from "../../db/database.ts";
import { insertCatalogRows } from "./catalog-store.ts";

/** ISO 3166-1 alpha-2, lower case. */
const isoCountries =
  "ad ae af ag ai al am ao aq ar as at au aw ax az ba bb bd be bf bg bh bi bj bl bm bn bo bq br bs bt bv bw by bz " +
  "ca cc cd cf cg ch ci ck cl cm cn co cr cu cv cw cx cy cz de dj dk dm do dz ec ee eg eh er es et fi fj fk fm fo fr " +
  "ga gb gd ge gf gg gh gi gl gm gn gp gq gr gs gt gu gw gy hk hm hn hr ht hu id ie il im in io iq ir is it je jm jo " +
  "jp ke kg kh ki km kn kp kr kw ky kz la lb lc li lk lr ls lt lu lv ly ma mc md me mf mg mh mk ml mm mn mo mp mq mr " +
  "ms mt mu mv mw mx my mz na nc ne nf ng ni nl no np nr nu nz om pa pe pf pg ph pk pl pm pn pr ps pt pw py qa re ro " +
  "rs ru rw sa sb sc sd se sg sh si sj sk sl sm sn so sr ss st sv sx sy sz tc td tf tg th tj tk tl tm tn to tr tt tv " +
  "tw tz ua ug um us uy uz va vc ve vg vi vn vu wf ws ye yt za zm zw";

export const countryIds: readonly string[] = isoCountries.split(" ");

/** Comprehensively sanctioned jurisdictions; the operator can edit the list. */
export const restrictedCountryIds: readonly string[] = ["cu", "ir", "kp", "sy"];

export interface SeedAsset {
  id: string;
  type: "fiat" | "crypto";
  name_en: string;
  decimal_places: number;
  published: boolean;
  depositable: boolean;
  withdrawable: boolean;
  usd_rate: string | null;
}

const fiat = {
  type: "fiat",
  decimal_places: 2,
  published: true,
  depositable: true,
  withdrawable: true,
} as const;
const crypto = {
  type: "crypto",
  published: true,
  depositable: false,
  withdrawable: false,
  usd_rate: null,
} as const;

export const seedAssets: readonly SeedAsset[] = [
  { id: "AED", name_en: "UAE Dirham", usd_rate: "0.27229408", ...fiat },
  { id: "USD", name_en: "US Dollar", usd_rate: "1", ...fiat },
  { id: "SAR", name_en: "Saudi Riyal", usd_rate: "0.26666667", ...fiat },
  { id: "EUR", name_en: "Euro", usd_rate: "1.08", ...fiat },
  { id: "BTC", name_en: "Bitcoin", decimal_places: 8, ...crypto },
  { id: "ETH", name_en: "Ethereum", decimal_places: 8, ...crypto },
  { id: "SOL", name_en: "Solana", decimal_places: 8, ...crypto },
  { id: "USDT", name_en: "Tether USD", decimal_places: 6, ...crypto },
];

export interface SeedPair {
  base: string;
  quote: string;
  buy: string;
  sell: string;
  min: string;
  max: string;
}

export const seedPairs: readonly SeedPair[] = [
  { base: "BTC", quote: "AED", buy: "349250.00", sell: "348550.00", min: "0.0001", max: "10" },
  { base: "BTC", quote: "USD", buy: "95100.00", sell: "94910.00", min: "0.0001", max: "10" },
  { base: "ETH", quote: "AED", buy: "12500.00", sell: "12475.00", min: "0.001", max: "250" },
  { base: "ETH", quote: "USD", buy: "3404.00", sell: "3397.20", min: "0.001", max: "250" },
  { base: "USDT", quote: "AED", buy: "3.6800", sell: "3.6650", min: "1", max: "1000000" },
  { base: "USDT", quote: "USD", buy: "1.0020", sell: "0.9980", min: "1", max: "1000000" },
  { base: "SOL", quote: "AED", buy: "662.00", sell: "660.70", min: "0.01", max: "10000" },
  { base: "SOL", quote: "USD", buy: "180.25", sell: "179.89", min: "0.01", max: "10000" },
];

/**
 * Inserts the seed catalog; rows already there (by id) are left as they are. A pair it adds quotes
 * for `quoteLifetimeSeconds` (QUOTE_LIFETIME_S) when given, else for the schema's default (15 s).
 */
export async function seedCatalog(
  db: Db,
  countryName: (id: string) => string,
  options: { quoteLifetimeSeconds?: number } = {},
): Promise<void> {
  await insertCatalogRows(db, {
    countries: countryIds.map((id) => ({
      id,
      name: countryName(id),
      supported: !restrictedCountryIds.includes(id),
    })),
    assets: seedAssets.map((a) => ({ ...a })),
    pairs: seedPairs.map((p) => ({
      id: `${p.base}-${p.quote}`,
      base_id: p.base,
      quote_id: p.quote,
      buy: p.buy,
      sell: p.sell,
      min_volume: p.min,
      max_volume: p.max,
      ...(options.quoteLifetimeSeconds === undefined ? {} : { lifetime_s: options.quoteLifetimeSeconds }),
    })),
  });
}

const regionNames = new Intl.DisplayNames(["en"], { type: "region" });

/** English country name from the ICU data Node ships; the id itself when ICU does not know it. */
export function englishCountryName(id: string): string {
  return regionNames.of(id.toUpperCase()) ?? id;
}
