// Test data: a valid client payload as a partner would send it, and a client row inserted
// directly (for tests of other modules that only need a client to exist in some state).

import { sql } from "kysely";
import type { Db } from "../db/database.ts";
import type { ClientStatus } from "../db/schema.ts";

/** A valid POST /v1/partner/clients body; `n` makes the unique fields unique. */
export function clientPayload(n: number, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const digits = String(n).padStart(7, "0");
  return {
    partner_client_id: `client-${n}`,
    account_type: "personal",
    name: `Client Number ${n}`,
    birth_date: "1990-05-17",
    email: `client${n}@example.com`,
    phone: `+97150${digits}`,
    residency_id: "ae",
    citizenship_id: "ae",
    place_of_birth_id: "ae",
    national_number: null,
    government_id_number: `784-1990-${digits}-1`,
    government_id_doe: "2030-01-31",
    address: { street: "1 Sheikh Zayed Rd", city: "Dubai", postal_code: "00000", unit: "Apt 12" },
    employment: {
      status: "employed",
      company: "Acme",
      job_industry: "information_technology_telco",
      job_level: "senior",
      job_title: "Engineer",
    },
    trading_volume: "1000_10000",
    account_purpose: ["long_term_investment"],
    ...overrides,
  };
}

export async function insertClient(
  db: Db,
  partnerId: string,
  n: number,
  state: { status?: ClientStatus; active?: boolean } = {},
): Promise<{ id: number; partnerClientId: string }> {
  const p = clientPayload(n);
  const row = await db
    .insertInto("clients")
    .values({
      partner_id: partnerId,
      partner_client_id: String(p.partner_client_id),
      account_type: "personal",
      name: String(p.name),
      birth_date: String(p.birth_date),
      status: state.status ?? "verified",
      active: state.active ?? true,
      email: String(p.email),
      phone: String(p.phone),
      residency_id: "ae",
      citizenship_id: "ae",
      place_of_birth_id: "ae",
      national_number: null,
      government_id_number: String(p.government_id_number),
      government_id_doe: String(p.government_id_doe),
      residency_visa_number: null,
      residency_visa_doe: null,
      address: JSON.stringify(p.address),
      employment: JSON.stringify(p.employment),
      trading_volume: String(p.trading_volume),
      account_purpose: p.account_purpose as string[],
    })
    .returning(["id", "partner_client_id"])
    .executeTakeFirstOrThrow();
  return { id: row.id, partnerClientId: row.partner_client_id };
}

// --- Clients and documents: what a failed request must leave untouched, and upload bodies. ---

/** Every client row and every document row, as text: equal before and after means nothing changed. */
export async function clientsState(db: Db): Promise<{ clients: number; documents: number; rows: string }> {
  const { rows } = await sql<{ clients: number; documents: number; rows: string | null }>`
    SELECT (SELECT count(*) FROM clients)::int8 AS clients,
           (SELECT count(*) FROM client_documents)::int8 AS documents,
           (SELECT string_agg(c::text, E'\n' ORDER BY c.id) FROM clients c) ||
             coalesce(E'\n' || (SELECT string_agg(d::text, E'\n' ORDER BY d.id) FROM client_documents d), '')
             AS rows
  `.execute(db);
  const r = rows[0]!;
  return { clients: Number(r.clients), documents: Number(r.documents), rows: r.rows ?? "" };
}

export interface MultipartPart {
  name: string;
  /** Present: the part is a file with this name. */
  filename?: string;
  contentType?: string;
  data: string | Uint8Array;
}

/** A multipart/form-data body and its Content-Type, byte for byte as a browser would send it. */
export function multipartBody(
  parts: readonly MultipartPart[],
  boundary = "----counterpart-test-boundary-7MA4YWxkTrZu0gW",
): { body: Buffer; contentType: string } {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition =
      p.filename === undefined
        ? `form-data; name="${p.name}"`
        : `form-data; name="${p.name}"; filename="${p.filename}"`;
    const head =
      `--${boundary}\r\nContent-Disposition: ${disposition}\r\n` +
      (p.contentType === undefined ? "" : `Content-Type: ${p.contentType}\r\n`) +
      "\r\n";
    chunks.push(Buffer.from(head), Buffer.from(p.data), Buffer.from("\r\n"));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** The first bytes of each accepted format, padded to `size` bytes: enough for sniffing by content. */
export function sampleFile(format: "jpeg" | "png" | "heic" | "heif" | "pdf", size = 256): Buffer {
  const heads: Record<typeof format, Buffer> = {
    jpeg: Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01]),
    png: Buffer.from([
      0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    ]),
    heic: Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from("ftypheic\0\0\0\0mif1heic", "latin1")]),
    heif: Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from("ftypmif1\0\0\0\0mif1heic", "latin1")]),
    pdf: Buffer.from("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n", "latin1"),
  };
  const head = heads[format];
  const out = Buffer.alloc(Math.max(size, head.length), 0x20);
  head.copy(out);
  return size < head.length ? out.subarray(0, size) : out;
}
