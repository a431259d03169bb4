// Test data: a valid client payload as a partner would send it, and a client row inserted
// directly (for tests of other modules that only need a client to exist in some state).

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import zlib from "node:zlib";
import { sql } from "kysely";
import type { Db } from "../db/database.ts";
import type { AccountPurpose, ClientStatus } from "../db/schema.ts";
import { fundingLegs } from "../modules/funding/funding-legs.ts";
import { fundOrder } from "../modules/funding/funding-store.ts";
import { houseSlots } from "../modules/ledger/legs.ts";
import { readCredentials, type SignatureToRecord } from "../modules/partners/index.ts";
import type { TestContext } from "./harness.ts";

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
      account_purpose: p.account_purpose as AccountPurpose[],
    })
    .returning(["id", "partner_client_id"])
    .executeTakeFirstOrThrow();
  return { id: row.id, partnerClientId: row.partner_client_id };
}

/**
 * A signature for an order's statement to record (partnerArgument(), and the batches' arrays), by
 * the partner's credentials as its row holds them now (readCredentials()): a random signature, expiring at `expiresAtMs`.
 */
export async function signatureToRecord(
  db: Db,
  partnerId: string,
  expiresAtMs: number,
  signature: Uint8Array = randomBytes(64),
): Promise<SignatureToRecord> {
  const { partner } = await readCredentials(db, partnerId);
  if (partner === undefined) throw new Error(`no partner ${partnerId}`);
  return {
    signature,
    expiresAtIso: new Date(expiresAtMs).toISOString(),
    publicKeys: partner.public_keys,
    allowedIps: partner.allowed_ips,
    budgets: [partner.rate_limit_reads, partner.rate_limit_writes, partner.rate_limit_quotes],
  };
}

// --- Clients and documents: what a failed request must leave untouched, and upload bodies. ---

/**
 * A completed deposit of `amount` (scale 8) of `assetId` to the client, written by the funding
 * store's statement directly (no request, no signature), its reference `fund-<client>-<asset>`
 * unless given.
 */
export async function depositDirectly(
  db: Db,
  partnerId: string,
  clientId: number,
  assetId: string,
  amount: bigint,
  ref = `fund-${clientId}-${assetId}`,
): Promise<void> {
  const { slot, legs } = fundingLegs("deposit", clientId, assetId, amount);
  await fundOrder(db, { partnerId, clientId, ref, type: "deposit", assetId, amount, legs, slot });
}

/**
 * A new partner with `n` verified clients (at most `houseSlots`), one per house slot, in slot
 * order, as the order queue batches them; each holding `fundAed` (scale 8) when given.
 */
export async function partnerWithClientsOfSlots(
  ctx: Pick<TestContext, "addPartner" | "services">,
  name: string,
  n: number,
  fundAed?: bigint,
) {
  if (n > houseSlots) throw new Error(`${n} clients of distinct slots: there are ${houseSlots} slots`);
  const db = ctx.services.database.db;
  const partner = await ctx.addPartner({ name });
  const clients: { id: number; partnerClientId: string }[] = [];
  for (let i = 1; clients.length < n; i++) {
    const client = await insertClient(db, partner.id, i);
    if (clients.some((c) => c.id % houseSlots === client.id % houseSlots)) continue;
    clients.push(client);
    if (fundAed !== undefined) await depositDirectly(db, partner.id, client.id, "AED", fundAed);
  }
  return { partner, clients: clients.sort((a, b) => (a.id % houseSlots) - (b.id % houseSlots)) };
}

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

/**
 * Uploads a document of one file (its front) for the partner's client, as the partner does; fails
 * the test unless it is accepted (201), and gives the document's id.
 */
export async function uploadDocument(
  ctx: Pick<TestContext, "signed">,
  partnerClientId: string,
  type: string,
  front: { filename: string; contentType: string; data: Uint8Array },
): Promise<number> {
  const { body, contentType } = multipartBody([
    { name: "type", data: type },
    { name: "front_file", ...front },
  ]);
  const res = await ctx.signed({
    method: "POST",
    url: `/v1/partner/clients/${encodeURIComponent(partnerClientId)}/documents`,
    body,
    headers: { "content-type": contentType },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().result.id;
}

export type SampleFormat = "jpeg" | "png" | "heic" | "heif" | "pdf";

/**
 * A whole file of an accepted format, of exactly `size` bytes (the smallest such file without
 * one): what the service's structural checks accept (modules/documents/file-formats.ts). The JPEG
 * and the PNG are real 8x8 and 1x1 images; the PDF is one blank page; the HEIC and HEIF files have
 * the boxes a HEIF file starts with. Each is padded inside its own structure (JPEG comment
 * segments, a PNG text chunk, a PDF comment, the HEIF media-data box), never after its end.
 */
export function sampleFile(format: SampleFormat, size?: number): Buffer {
  const file = sampleFiles[format](size ?? 0);
  if (size !== undefined && file.length !== size) {
    throw new Error(`sampleFile: no whole ${format} file of ${size} bytes (the smallest is ${file.length})`);
  }
  return file;
}

const sampleFiles: Record<SampleFormat, (size: number) => Buffer> = {
  jpeg: sampleJpeg,
  png: samplePng,
  pdf: samplePdf,
  heic: (size) => sampleHeif("heic", size),
  heif: (size) => sampleHeif("mif1", size),
};

/**
 * A baseline 8x8 grey JPEG: one quantisation table, a frame header, one-code Huffman tables, one
 * scan whose only block is DC 0 and end-of-block, and the end marker; padded with comment segments
 * (at most 65,537 bytes each) and fill bytes (0xFF) before the first table.
 */
function sampleJpeg(size: number): Buffer {
  const segment = (marker: number, body: Buffer) => {
    const head = Buffer.from([0xff, marker, 0, 0]);
    head.writeUInt16BE(body.length + 2, 2);
    return Buffer.concat([head, body]);
  };
  const huffman = (tableClass: number) =>
    segment(
      0xc4,
      Buffer.concat([
        Buffer.from([tableClass << 4]),
        Buffer.from([1, ...Array(15).fill(0)]),
        Buffer.from([0]),
      ]),
    );
  const image = Buffer.concat([
    segment(0xdb, Buffer.concat([Buffer.from([0]), Buffer.alloc(64, 1)])),
    segment(0xc0, Buffer.from([8, 0, 8, 0, 8, 1, 1, 0x11, 0])),
    huffman(0),
    huffman(1),
    segment(0xda, Buffer.from([1, 1, 0x00, 0, 63, 0])),
    Buffer.from([0x3f]), // DC difference 0 ("0"), end of block ("0"), padded with one bits
    Buffer.from([0xff, 0xd9]),
  ]);
  const soi = Buffer.from([0xff, 0xd8]);
  const padding: Buffer[] = [];
  let left = size - soi.length - image.length;
  while (left >= 4) {
    let n = Math.min(left, 65_537);
    if (left - n > 0 && left - n < 4) n -= 4;
    padding.push(segment(0xfe, Buffer.alloc(n - 4, 0x20)));
    left -= n;
  }
  if (left > 0) padding.push(Buffer.alloc(left, 0xff));
  return Buffer.concat([soi, ...padding, image]);
}

/** A 1x1 RGB PNG with a tEXt chunk that takes the padding; CRCs computed. */
function samplePng(size: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const typed = Buffer.concat([Buffer.from(type, "latin1"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(typed));
    return Buffer.concat([length, typed, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(1, 0);
  header.writeUInt32BE(1, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // RGB
  const parts = [
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", zlib.deflateSync(Buffer.from([0, 0x2a, 0x7a, 0xc8]))),
  ];
  const end = chunk("IEND", Buffer.alloc(0));
  const keyword = Buffer.from("Comment\0", "latin1");
  const fixed = parts.reduce((n, p) => n + p.length, 0) + end.length + 12 + keyword.length;
  const text = Buffer.concat([keyword, Buffer.alloc(Math.max(0, size - fixed), 0x20)]);
  return Buffer.concat([...parts, chunk("tEXt", text), end]);
}

/** One blank page, with a cross-reference table; a comment line after the header takes the padding. */
function samplePdf(size: number): Buffer {
  const build = (pad: number, trailingNewlines: number) => {
    let text = "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n";
    if (pad > 0) text += `%${" ".repeat(pad - 2)}\n`;
    const objects = [
      "<< /Type /Catalog /Pages 2 0 R >>",
      "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 72 72] >>",
    ];
    const offsets: number[] = [];
    for (const [i, body] of objects.entries()) {
      offsets.push(text.length);
      text += `${i + 1} 0 obj\n${body}\nendobj\n`;
    }
    const xref = text.length;
    text += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
    for (const o of offsets) text += `${String(o).padStart(10, "0")} 00000 n \n`;
    text += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
    return Buffer.from(text + "\n".repeat(trailingNewlines), "latin1");
  };
  const base = build(0, 0).length;
  // The padding comment is at least 2 bytes ("%" and its newline); the offsets' digits may grow
  // with it, so take the longest padding that fits and finish with white space after %%EOF.
  let pad = Math.max(0, size - base - 12);
  if (pad === 1) pad = 0;
  const next = (p: number) => (p === 0 ? 2 : p + 1);
  for (let guard = 0; guard < 32 && build(next(pad), 0).length <= size; guard++) pad = next(pad);
  const body = build(pad, 0);
  return build(pad, Math.max(0, size - body.length));
}

/** ftyp (the brand given, mif1 and heic compatible), a meta box with a pict handler, and mdat taking the padding. */
function sampleHeif(major: "heic" | "mif1", size: number): Buffer {
  const box = (type: string, body: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(body.length + 8, 0);
    head.write(type, 4, "latin1");
    return Buffer.concat([head, body]);
  };
  const ftyp = box("ftyp", Buffer.from(`${major}\0\0\0\0mif1heic`, "latin1"));
  const hdlr = box("hdlr", Buffer.concat([Buffer.alloc(8), Buffer.from("pict", "latin1"), Buffer.alloc(13)]));
  const meta = box("meta", Buffer.concat([Buffer.alloc(4), hdlr]));
  const mdat = box("mdat", Buffer.alloc(Math.max(0, size - ftyp.length - meta.length - 8), 0x20));
  return Buffer.concat([ftyp, meta, mdat]);
}

/**
 * How many rows of a partner's a table holds (its orders, quotes, recorded signatures), spent quotes
 * alone with `spentOnly`: what a test compares before and after a request.
 */
export async function partnerRowCount(
  db: Db,
  table: "orders" | "quotes" | "used_signatures",
  partnerId: string,
  spentOnly = false,
): Promise<number> {
  let q = db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll().as("n"))
    .where("partner_id", "=", partnerId);
  if (spentOnly) q = q.where("spent_at" as never, "is not", null);
  return Number((await q.executeTakeFirstOrThrow()).n);
}
