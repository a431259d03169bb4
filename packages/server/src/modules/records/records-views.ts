// The back office records as the console shows them: decimals as plain strings (never JS numbers,
// never exponent notation: "0", "3.5", "-503.5"), an account named by its owner, kind and slot.

import { Type } from "typebox";
import { moneyFromPg } from "../../db/numeric.ts";
import type {
  AssetTotalRow,
  ClientBalanceLine,
  HouseAccountRow,
  OrderListRow,
  PostingRow,
} from "./records-store.ts";

/** A scale-8 amount as an operator reads it: plain digits, no trailing zeros. */
export function plainDecimal(v: bigint): string {
  const abs = v < 0n ? -v : v;
  const whole = abs / 100_000_000n;
  const fraction = (abs % 100_000_000n).toString().padStart(8, "0").replace(/0+$/, "");
  return `${v < 0n ? "-" : ""}${whole}${fraction === "" ? "" : `.${fraction}`}`;
}

const formatDecimal = plainDecimal;

const dec = (v: string | null) => (v === null ? null : formatDecimal(moneyFromPg(v)));

export interface OrderRecord {
  id: number;
  partner_id: string;
  client_id: number;
  partner_client_id: string;
  partner_order_ref: string | null;
  type: string;
  source: string;
  status: string;
  price: string | null;
  credit: string | null;
  credit_asset_id: string | null;
  debit: string | null;
  debit_asset_id: string | null;
  fee: string;
  fee_asset_id: string;
  vat: string;
  created_at: string;
  transitioned_at: string;
  updated_at: string;
}

export function orderRecord(r: OrderListRow): OrderRecord {
  return {
    ...r,
    price: dec(r.price),
    credit: dec(r.credit),
    debit: dec(r.debit),
    fee: dec(r.fee) ?? "0",
    vat: dec(r.vat) ?? "0",
  };
}

export interface PostingRecord {
  id: number;
  account_id: number;
  account: string;
  asset_id: string;
  amount: string;
}

export function postingRecord(r: PostingRow): PostingRecord {
  const owner = r.client_id === null ? `${r.kind} slot ${r.slot}` : `client ${r.client_id}`;
  return {
    id: r.id,
    account_id: r.account_id,
    account: owner,
    asset_id: r.asset_id,
    amount: dec(r.amount) ?? "0",
  };
}

export interface HouseAccountRecord {
  kind: string;
  partner_id: string;
  partner_name: string;
  asset_id: string;
  balance: string;
  slots: number;
}

export function houseAccountRecord(r: HouseAccountRow): HouseAccountRecord {
  return { ...r, balance: dec(r.balance) ?? "0" };
}

export interface AssetTotalRecord {
  asset_id: string;
  clients: string;
  house: string;
  total: string;
}

export function assetTotalRecord(r: AssetTotalRow): AssetTotalRecord {
  return {
    asset_id: r.asset_id,
    clients: dec(r.clients) ?? "0",
    house: dec(r.house) ?? "0",
    total: dec(r.total) ?? "0",
  };
}

export interface ClientBalanceRecord {
  asset_id: string;
  balance: string;
  held: string;
  available: string;
}

export function clientBalanceRecord(r: ClientBalanceLine): ClientBalanceRecord {
  const balance = moneyFromPg(r.balance);
  const held = moneyFromPg(r.held);
  return {
    asset_id: r.asset_id,
    balance: formatDecimal(balance),
    held: formatDecimal(held),
    available: formatDecimal(balance - held),
  };
}

// Wire shapes of the admin API's order reads (`GET /admin/orders`, `GET /admin/orders/:order_id`).

const NullableString = Type.Union([Type.String(), Type.Null()]);

export const AdminOrderSchema = Type.Object(
  {
    id: Type.Integer(),
    partner_id: Type.String(),
    client_id: Type.Integer(),
    partner_client_id: Type.String(),
    partner_order_ref: NullableString,
    type: Type.String(),
    source: Type.String(),
    status: Type.String(),
    price: NullableString,
    credit: NullableString,
    credit_asset_id: NullableString,
    debit: NullableString,
    debit_asset_id: NullableString,
    fee: Type.String(),
    fee_asset_id: Type.String(),
    vat: Type.String(),
    created_at: Type.String(),
    transitioned_at: Type.String(),
    updated_at: Type.String(),
  },
  { $id: "AdminOrder" },
);

export const AdminPostingSchema = Type.Object(
  {
    id: Type.Integer(),
    account_id: Type.Integer(),
    account: Type.String({ description: "client N, or the house account's kind and slot" }),
    asset_id: Type.String(),
    amount: Type.String({ description: "signed decimal string" }),
  },
  { $id: "AdminPosting" },
);

/** A keyset page: pass `next` back as after_at and after_id for the older page; null on the last. */
export const AdminOrderPageSchema = Type.Object(
  {
    items: Type.Array(AdminOrderSchema),
    next: Type.Union([Type.Object({ after_at: Type.String(), after_id: Type.Integer() }), Type.Null()]),
  },
  { $id: "AdminOrderPage" },
);

export const AdminOrderDetailSchema = Type.Object(
  { result: Type.Object({ order: AdminOrderSchema, postings: Type.Array(AdminPostingSchema) }) },
  { $id: "AdminOrderDetail" },
);
