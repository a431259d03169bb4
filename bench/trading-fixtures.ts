// What the in-process trading scenarios (quote-kept, execute-kept) start from: BTC-AED priced and
// fresh, and the bench partner's clients funded in AED far beyond what the run can spend.

import { sql } from "kysely";
import type { Db } from "../packages/server/src/db/database.ts";
import { FundingService } from "../packages/server/src/modules/funding/funding-service.ts";

export async function pricedAndFunded(
  db: Db,
  partnerId: string,
  clients: number,
  name: string,
): Promise<void> {
  await sql`UPDATE asset_pairs SET buy = 350000, sell = 349000, price_at = now(), tradable = true
            WHERE id = 'BTC-AED'`.execute(db);
  const funding = new FundingService(db);
  for (let n = 1; n <= clients; n++) {
    const r = await funding.deposit(partnerId, {
      partnerClientId: `client-${n}`,
      assetId: "AED",
      amount: 10n ** 18n,
      partnerOrderRef: `${name}-fund-${n}`,
    });
    if (!r.ok) throw new Error(`${name}: funding answered ${r.error}`);
  }
}
