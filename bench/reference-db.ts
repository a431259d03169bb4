// The reference server's own tables (bench/reference-server.ts), made in the service's database
// next to the service's own: a balance per client and asset, orders with a unique partner
// reference, quotes kept by the hash of their token. Nothing else: no postings, no house
// accounts, no foreign keys, no statement triggers.

import type pg from "pg";

const schema = `
CREATE TABLE ref_balances (
  partner_id uuid NOT NULL,
  partner_client_id text NOT NULL,
  asset_id text NOT NULL,
  balance numeric(38, 8) NOT NULL DEFAULT 0 CHECK (balance >= 0),
  PRIMARY KEY (partner_id, partner_client_id, asset_id)
);
CREATE TABLE ref_orders (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  partner_id uuid NOT NULL,
  partner_client_id text NOT NULL,
  partner_order_ref text,
  type text NOT NULL,
  status text NOT NULL DEFAULT 'completed',
  asset_id text NOT NULL,
  amount numeric(38, 8) NOT NULL CHECK (amount > 0),
  counter_asset_id text,
  counter_amount numeric(38, 8),
  price numeric(38, 8),
  fee numeric(38, 8) NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (partner_id, partner_order_ref)
);
CREATE TABLE ref_quotes (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  token_hash bytea NOT NULL UNIQUE,
  partner_id uuid NOT NULL,
  partner_client_id text NOT NULL,
  pair_id text NOT NULL,
  base_id text NOT NULL,
  quote_id text NOT NULL,
  side text NOT NULL,
  price numeric(38, 8) NOT NULL,
  base_amount numeric(38, 8) NOT NULL,
  quote_amount numeric(38, 8) NOT NULL,
  fee numeric(38, 8) NOT NULL,
  expires_at timestamptz NOT NULL,
  spent_at timestamptz
);
`;

/**
 * Creates the reference's tables and gives each of the partner's clients a balance row for every
 * asset of the catalog, `aed` of AED and nothing of the rest.
 */
export async function prepareReferenceTables(db: pg.Client, partnerId: string, aed: string): Promise<void> {
  await db.query(schema);
  await db.query(
    `INSERT INTO ref_balances (partner_id, partner_client_id, asset_id, balance)
     SELECT c.partner_id, c.partner_client_id, a.id, CASE WHEN a.id = 'AED' THEN $2::numeric ELSE 0 END
       FROM clients c CROSS JOIN assets a WHERE c.partner_id = $1`,
    [partnerId, aed],
  );
}

/** Orders per type in the reference's table. */
export async function referenceCounts(db: pg.Client): Promise<Record<string, number>> {
  const { rows } = await db.query<{ type: string; n: string }>(
    "SELECT type, count(*)::text AS n FROM ref_orders GROUP BY type",
  );
  return Object.fromEntries(rows.map((r) => [r.type, Number(r.n)]));
}
