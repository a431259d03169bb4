// The order as partners see it (docs/reference.md §2.3): one shape for every type, decimals as strings.

import { orderSources, orderStatuses, orderTypes } from "@counterpart/protocol";
import type { Selectable } from "kysely";
import { type Static, Type } from "typebox";
import { decimalFromPg } from "../../db/numeric.ts";
import type { OrdersTable } from "../../db/schema.ts";
import { literalUnion, pageSchema } from "../../platform/wire-schemas.ts";

export { orderSources, orderStatuses, orderTypes } from "@counterpart/protocol";

const Decimal = Type.String({ description: "decimal string (may use scientific notation)" });
const NullableDecimal = Type.Union([Decimal, Type.Null()]);
const NullableString = Type.Union([Type.String(), Type.Null()]);

export const OrderSchema = Type.Object(
  {
    id: Type.Integer(),
    order_no: Type.String({ description: "A human label such as ORD-20261121-000042, never a lookup key." }),
    partner_order_ref: NullableString,
    partner_client_id: Type.String(),
    type: literalUnion(orderTypes),
    source: literalUnion(orderSources),
    status: literalUnion(orderStatuses),
    price: NullableDecimal,
    credit: NullableDecimal,
    credit_asset_id: NullableString,
    debit: NullableDecimal,
    debit_asset_id: NullableString,
    fee: Decimal,
    fee_asset_id: Type.String(),
    vat: Decimal,
    created_at: Type.String(),
    transitioned_at: Type.String(),
    updated_at: Type.String(),
  },
  { $id: "Order" },
);

export type OrderRow = Selectable<OrdersTable> & { partner_client_id: string };

export type OrderView = Static<typeof OrderSchema>;

export const OrderPageSchema = pageSchema("OrderPage", OrderSchema);
export type OrderPage = Static<typeof OrderPageSchema>;

const decimalOrNull = (v: string | null) => (v === null ? null : decimalFromPg(v));

/** A human label, not a lookup key: the creation date and the id. */
export function orderNumber(id: number, createdAt: string): string {
  return `ORD-${createdAt.slice(0, 10).replaceAll("-", "")}-${String(id).padStart(6, "0")}`;
}

export function orderView(o: OrderRow): OrderView {
  return {
    id: o.id,
    order_no: orderNumber(o.id, o.created_at),
    partner_order_ref: o.partner_order_ref,
    partner_client_id: o.partner_client_id,
    type: o.type,
    source: o.source,
    status: o.status,
    price: decimalOrNull(o.price),
    credit: decimalOrNull(o.credit),
    credit_asset_id: o.credit_asset_id,
    debit: decimalOrNull(o.debit),
    debit_asset_id: o.debit_asset_id,
    fee: decimalFromPg(o.fee),
    fee_asset_id: o.fee_asset_id,
    vat: decimalFromPg(o.vat),
    created_at: o.created_at,
    transitioned_at: o.transitioned_at,
    updated_at: o.updated_at,
  };
}
