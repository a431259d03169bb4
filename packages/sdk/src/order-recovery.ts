// Creating an order with a partner_order_ref, and the recovery from 2020 (docs/reference.md §7.4): "do not retry
// with the same reference; fetch the order by reference; completed means the original succeeded;
// failed or rejected means retry with a new reference".
//
// A 2020 reaches a caller in two ordinary ways: the SDK sent the request again after the first
// copy's response was lost (the first copy created the order), or the caller re-ran an operation
// after a crash. In both, the order holding the reference is the answer, provided it is the order
// this request would have created: the same reference with another body is also a 2020, and
// returning some other order as this request's result would be a lie about money. So the order is
// compared with the request first.

import { parseDecimal } from "@counterpart/protocol";
import { ConflictError, NotFoundError, OrderRefFailedError } from "./errors.ts";
import { type ApiRequest, type RequestOptions, type RequestSender, segment } from "./request-sender.ts";
import { resultOf, withResponse } from "./responses.ts";
import type { Order, OrderResult, OrderType, WithResponse } from "./types.ts";

/** What the order created by this request must look like. */
export interface OrderExpectation {
  partnerOrderRef: string;
  partnerClientId: string;
  types: readonly OrderType[];
  /** For funding: the asset and amount of the leg (debit for deposits, credit for withdrawals). */
  leg?: { side: "debit" | "credit"; assetId: string; amount: string };
}

/** Why `order` is not the one the request would have created, or null when it is. */
export function mismatch(order: Order, expected: OrderExpectation): string | null {
  if (!expected.types.includes(order.type)) return `it is a ${order.type}`;
  if (order.partner_client_id !== expected.partnerClientId) {
    return `it belongs to client ${JSON.stringify(order.partner_client_id)}`;
  }
  if (expected.leg !== undefined) {
    const { side, assetId, amount } = expected.leg;
    const asset = side === "debit" ? order.debit_asset_id : order.credit_asset_id;
    const value = side === "debit" ? order.debit : order.credit;
    if (asset !== assetId) return `its asset is ${String(asset)}`;
    const want = parseDecimal(amount);
    const have = value === null ? null : parseDecimal(value);
    if (want === null || have === null || want !== have) return `its amount is ${String(value)}`;
  }
  return null;
}

export async function fetchOrderByRef(
  sender: RequestSender,
  ref: string,
  options: RequestOptions,
): Promise<WithResponse<Order>> {
  const response = await sender.send(
    {
      method: "GET",
      path: `/v1/partner/orders/ref/${segment(ref, "partner_order_ref")}`,
      signed: true,
      replaySafe: true,
    },
    options,
  );
  return resultOf<Order>(response);
}

/** Sends an order-creating request; on 2020 resolves it as docs/reference.md §7.4 says (see the file header). */
export async function createOrder(
  sender: RequestSender,
  request: ApiRequest,
  expected: OrderExpectation | null,
  options: RequestOptions,
): Promise<WithResponse<OrderResult>> {
  try {
    const response = await sender.send(request, options);
    const order = resultOf<Order>(response);
    return withResponse({ order, replayed: false }, order.lastResponse);
  } catch (err) {
    if (!(err instanceof ConflictError) || err.code !== 2020 || expected === null) throw err;
    const ref = expected.partnerOrderRef;
    let order: WithResponse<Order>;
    try {
      order = await fetchOrderByRef(sender, ref, options);
    } catch (lookup) {
      // The reference is taken but its order is not visible: nothing to recover, report the 2020.
      if (lookup instanceof NotFoundError) throw err;
      throw lookup;
    }
    const fields = {
      status: err.status,
      code: err.code,
      msg: err.msg,
      msgDetail: err.msgDetail,
      method: err.method,
      target: err.target,
      requestId: err.requestId,
    };
    const why = mismatch(order, expected);
    if (why !== null) {
      throw new ConflictError(
        `${err.method} ${err.target}: partner_order_ref ${JSON.stringify(ref)} already names order ${order.id}, ` +
          `which is not this request's (${why}). To fix: use a new partner_order_ref for this order`,
        fields,
        ref,
        order,
      );
    }
    if (order.status === "failed" || order.status === "rejected") {
      throw new OrderRefFailedError(
        `${err.method} ${err.target}: partner_order_ref ${JSON.stringify(ref)} already names order ${order.id} ` +
          `in status ${order.status}: the earlier request moved no money and the reference cannot be used again. ` +
          `To fix: send the request again with a new partner_order_ref${order.type === "buy" || order.type === "sell" ? " and a new quote" : ""}`,
        fields,
        order,
      );
    }
    return withResponse({ order, replayed: true }, order.lastResponse);
  }
}
