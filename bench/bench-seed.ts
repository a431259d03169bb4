// A bench's database made as the service makes its own: the project's migrations and catalog, then
// one partner with one key (the same id in every run) and its verified clients, for the scenarios
// that work on the database without the service's HTTP side (deposit-sql, funding-facts).

import { generateKeyPair } from "@counterpart/protocol";
import { sql } from "kysely";
import type { DatabaseHandle } from "../packages/server/src/db/database.ts";
import { migrate } from "../packages/server/src/db/migrate.ts";
import { englishCountryName, seedCatalog } from "../packages/server/src/modules/catalog/index.ts";
import { insertClient } from "../packages/server/src/testing/fixtures.ts";

export interface BenchPartner {
  partnerId: string;
  publicKeyPem: string;
  /** The clients' ids, client-1 first. */
  clientIds: number[];
}

/** Migrates and seeds `database`, then adds the bench's partner and `clients` verified clients. */
export async function seedBenchPartner(database: DatabaseHandle, clients: number): Promise<BenchPartner> {
  const db = database.db;
  await migrate(database);
  await seedCatalog(db, englishCountryName);
  const partnerId = "5f1d3c2a-8b4e-4c6d-9e7f-0a1b2c3d4e5f";
  const { publicKeyPem } = generateKeyPair();
  await sql`INSERT INTO partners (id, name, public_key_pem, allowed_ips)
            VALUES (${partnerId}, 'Bench Partner', ${publicKeyPem}, '{127.0.0.1/32}')`.execute(db);
  await sql`INSERT INTO partner_keys (id, partner_id, label, public_key_pem)
            VALUES (gen_random_uuid(), ${partnerId}, 'bench', ${publicKeyPem})`.execute(db);
  const clientIds: number[] = [];
  for (let n = 1; n <= clients; n++) clientIds.push((await insertClient(db, partnerId, n)).id);
  return { partnerId, publicKeyPem, clientIds };
}
