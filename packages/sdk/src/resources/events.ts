// Events and webhooks (docs/reference.md §6, beyond the contract): the feed as an async iterator
// that resumes from a cursor, webhook endpoints, and the check of a webhook's signature.

import {
  canonicalPath,
  canonicalString,
  decodeSignature,
  parsePublicKey,
  verifySignature,
} from "@counterpart/protocol";
import type { RequestOptions, RequestSender } from "../request-sender.ts";
import { itemsOf, responseInfo, resultOf, withResponse } from "../responses.ts";
import type { WithResponse } from "../types.ts";
import type { components } from "../wire.ts";

export type Event = components["schemas"]["Event"];
export type EventFeed = components["schemas"]["EventFeed"];
export type WebhookEndpoint = components["schemas"]["WebhookEndpoint"];
export type WebhookDelivery = components["schemas"]["WebhookDelivery"];
export type EventType = Event["type"];

/** One page of the feed: its events and the page itself carry the `lastResponse` of its request. */
export type EventPage = WithResponse<Omit<EventFeed, "items"> & { items: WithResponse<Event>[] }>;

export interface EventListParams {
  /** An event id: start after it (the last one you processed). */
  after?: string;
  type?: readonly EventType[];
  partner_client_id?: string;
  /** Events per request, 1 to 100 (default 100). */
  limit?: number;
}

export class Events {
  readonly #sender: RequestSender;
  constructor(sender: RequestSender) {
    this.#sender = sender;
  }

  /** GET /v1/partner/events: one page of the feed. */
  async page(params: EventListParams = {}, options: RequestOptions = {}): Promise<EventPage> {
    const response = await this.#sender.send(
      {
        method: "GET",
        path: "/v1/partner/events",
        query: {
          after: params.after,
          type: params.type,
          partner_client_id: params.partner_client_id,
          limit: params.limit ?? 100,
        },
        signed: true,
        replaySafe: true,
      },
      options,
    );
    const body = response.body as EventFeed;
    if (typeof body !== "object" || body === null || !Array.isArray(body.items))
      throw new TypeError("GET /v1/partner/events: the answer is not an event feed");
    // As every other list: the page and each of its events carry the response they came in.
    const info = responseInfo(response);
    for (const e of body.items) if (typeof e === "object" && e !== null) withResponse(e, info);
    return withResponse(body as Omit<EventFeed, "items"> & { items: WithResponse<Event>[] }, info);
  }

  /** GET /v1/partner/events/{id}: one event (NotFoundError when it is not one of yours). */
  async get(eventId: string, options: RequestOptions = {}): Promise<WithResponse<Event>> {
    const response = await this.#sender.send(
      {
        method: "GET",
        path: `/v1/partner/events/${encodeURIComponent(eventId)}`,
        signed: true,
        replaySafe: true,
      },
      options,
    );
    return resultOf<Event>(response);
  }

  /**
   * Every event after `params.after`, oldest first, page after page, until the feed has no more
   * for now. Store each event's id once processed and pass it as `after` to resume there. Each
   * event carries the `lastResponse` of the page it came in.
   */
  async *list(
    params: EventListParams = {},
    options: RequestOptions = {},
  ): AsyncGenerator<WithResponse<Event>> {
    let after = params.after;
    for (;;) {
      const page = await this.page({ ...params, ...(after === undefined ? {} : { after }) }, options);
      for (const e of page.items) yield e;
      if (!page.has_more || page.next_cursor === null) return;
      after = page.next_cursor;
    }
  }
}

/**
 * The headers of a received delivery, as any server hands them over: a Fetch `Headers` object, or a
 * plain object such as Node's IncomingHttpHeaders (names in any case). A header given more than
 * once (a list, or two names differing only in case) counts as missing, as in verifyTestRequest:
 * a delivery carries each of its headers once.
 */
export type WebhookHeaders =
  | { get(name: string): string | null }
  | { readonly [name: string]: string | readonly string[] | undefined };

/** The query of webhooks.deliveries (docs/reference.md §6.3). */
export interface WebhookDeliveryListParams {
  /** Deliveries to return, 1 to 100 (default 20). */
  limit?: number;
  /** A delivery id: only the deliveries older than it (the next page after a delivery's id). */
  before?: number;
}

export interface WebhookKey {
  key_id: string;
  public_key_pem: string;
}

/**
 * `eventId` is the `id` of the signed body, which the X-Event-ID header must repeat: deduplicate
 * on it, never on the header alone.
 */
export type WebhookVerification = { ok: true; eventId: string } | { ok: false; reason: string };

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof headers.get === "function") {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const record = headers as { readonly [name: string]: string | readonly string[] | undefined };
  const names = Object.keys(record).filter((k) => k.toLowerCase() === name);
  const value = names.length === 1 ? record[names[0]!] : undefined;
  return typeof value === "string" ? value : undefined;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The `id` of a delivery's body when it is a JSON object carrying a string id, else null. */
function bodyEventId(rawBody: string | Uint8Array): string | null {
  try {
    const parsed: unknown = JSON.parse(typeof rawBody === "string" ? rawBody : utf8.decode(rawBody));
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return null;
    const id = (parsed as { id?: unknown }).id;
    return typeof id === "string" && id !== "" ? id : null;
  } catch {
    return null;
  }
}

export class Webhooks {
  readonly #sender: RequestSender;
  constructor(sender: RequestSender) {
    this.#sender = sender;
  }

  /**
   * Checks a delivery: the key named by X-Key-ID among `publicKeys` (from
   * GET /v1/public/webhook-keys), the Ed25519 signature over X-Timestamp + POST + `path` (the path
   * and query the delivery was posted to) + SHA-256 of the exact `rawBody`, and a timestamp at
   * most `toleranceMs` old (5 minutes by default). Pass the body's bytes as received, not a
   * re-serialised object.
   *
   * The signature does not cover X-Event-ID, so the header alone proves nothing: anyone holding a
   * captured delivery could replay it within the window under a new X-Event-ID and pass a
   * deduplication keyed on it. The signed body's `id` is the event's id; a delivery whose header
   * differs from it is refused, and the id returned is the body's.
   */
  static verify(
    rawBody: string | Uint8Array,
    headers: WebhookHeaders,
    publicKeys: readonly WebhookKey[],
    options: { path: string; nowMs?: number; toleranceMs?: number },
  ): WebhookVerification {
    const keyId = header(headers, "x-key-id");
    const timestamp = header(headers, "x-timestamp");
    const signature = header(headers, "x-signature");
    const eventId = header(headers, "x-event-id");
    if (!keyId || !timestamp || !signature || !eventId) return { ok: false, reason: "missing headers" };
    const key = publicKeys.find((k) => k.key_id === keyId);
    if (key === undefined) return { ok: false, reason: "unknown key id" };
    const parsed = parsePublicKey(key.public_key_pem);
    if (!parsed.ok) return { ok: false, reason: "not an Ed25519 public key" };
    if (!/^[0-9]{13}$/.test(timestamp)) return { ok: false, reason: "bad timestamp" };
    const age = (options.nowMs ?? Date.now()) - Number(timestamp);
    if (age > (options.toleranceMs ?? 300_000) || age < -60_000)
      return { ok: false, reason: "timestamp outside the window" };
    const path = canonicalPath(options.path);
    const sig = decodeSignature(signature);
    if (path === null || sig === null) return { ok: false, reason: "bad signature" };
    const canonical = canonicalString({ timestamp, method: "POST", path, body: rawBody });
    if (!verifySignature(parsed.key, canonical, sig)) return { ok: false, reason: "bad signature" };
    const bodyId = bodyEventId(rawBody);
    if (bodyId === null) return { ok: false, reason: "body is not an event" };
    if (bodyId !== eventId) return { ok: false, reason: "X-Event-ID differs from the body's id" };
    return { ok: true, eventId: bodyId };
  }

  /** The instance form of Webhooks.verify. */
  verify(
    rawBody: string | Uint8Array,
    headers: WebhookHeaders,
    publicKeys: readonly WebhookKey[],
    options: { path: string; nowMs?: number; toleranceMs?: number },
  ): WebhookVerification {
    return Webhooks.verify(rawBody, headers, publicKeys, options);
  }

  /** GET /v1/public/webhook-keys (unsigned). */
  async publicKeys(options: RequestOptions = {}): Promise<WithResponse<WithResponse<WebhookKey>[]>> {
    const response = await this.#sender.send(
      { method: "GET", path: "/v1/public/webhook-keys", signed: false, replaySafe: true },
      options,
    );
    return itemsOf<WebhookKey>(response);
  }

  async create(
    body: { url: string; event_types?: readonly EventType[] },
    options: RequestOptions = {},
  ): Promise<WithResponse<WebhookEndpoint>> {
    const response = await this.#sender.send(
      { method: "POST", path: "/v1/partner/webhook-endpoints", json: body, signed: true, replaySafe: false },
      options,
    );
    return resultOf<WebhookEndpoint>(response);
  }

  async list(options: RequestOptions = {}): Promise<WithResponse<WithResponse<WebhookEndpoint>[]>> {
    const response = await this.#sender.send(
      { method: "GET", path: "/v1/partner/webhook-endpoints", signed: true, replaySafe: true },
      options,
    );
    return itemsOf<WebhookEndpoint>(response);
  }

  /** GET /v1/partner/webhook-endpoints/{id}: one endpoint (NotFoundError when it is not one of yours). */
  async get(endpointId: string, options: RequestOptions = {}): Promise<WithResponse<WebhookEndpoint>> {
    const response = await this.#sender.send(
      {
        method: "GET",
        path: `/v1/partner/webhook-endpoints/${encodeURIComponent(endpointId)}`,
        signed: true,
        replaySafe: true,
      },
      options,
    );
    return resultOf<WebhookEndpoint>(response);
  }

  /**
   * DELETE /v1/partner/webhook-endpoints/{id}: the endpoint and its delivery log. Sent again after
   * a lost response (a second copy cannot delete anything else); a 404 to that copy means the
   * first one deleted it, so it resolves. A 404 to the first copy is a NotFoundError.
   */
  async delete(endpointId: string, options: RequestOptions = {}): Promise<void> {
    await this.#sender.send(
      {
        method: "DELETE",
        path: `/v1/partner/webhook-endpoints/${encodeURIComponent(endpointId)}`,
        signed: true,
        replaySafe: true,
        notFoundAfterLostResponseIsDone: true,
      },
      options,
    );
  }

  /**
   * GET /v1/partner/webhook-endpoints/{id}/deliveries: the endpoint's deliveries, newest first,
   * `params.limit` of them (1 to 100, default 20) older than the delivery id `params.before`: pass
   * the last one's id as `before` to read on.
   */
  async deliveries(
    endpointId: string,
    params: WebhookDeliveryListParams = {},
    options: RequestOptions = {},
  ): Promise<WithResponse<WithResponse<WebhookDelivery>[]>> {
    const { limit, before } = params;
    if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 1 || limit > 100))
      throw new RangeError(`limit must be an integer from 1 to 100, got ${String(limit)}`);
    if (before !== undefined && (!Number.isSafeInteger(before) || before < 1))
      throw new RangeError(`before must be a delivery id (a positive integer), got ${String(before)}`);
    const response = await this.#sender.send(
      {
        method: "GET",
        path: `/v1/partner/webhook-endpoints/${encodeURIComponent(endpointId)}/deliveries`,
        query: { limit, before },
        signed: true,
        replaySafe: true,
      },
      options,
    );
    return itemsOf<WebhookDelivery>(response);
  }

  async sendTest(endpointId: string, options: RequestOptions = {}): Promise<WithResponse<WebhookDelivery>> {
    const response = await this.#sender.send(
      {
        method: "POST",
        path: `/v1/partner/webhook-endpoints/${encodeURIComponent(endpointId)}/test`,
        signed: true,
        replaySafe: false,
      },
      options,
    );
    return resultOf<WebhookDelivery>(response);
  }

  async redeliver(
    endpointId: string,
    eventId: string,
    options: RequestOptions = {},
  ): Promise<WithResponse<WebhookDelivery>> {
    const response = await this.#sender.send(
      {
        method: "POST",
        path: `/v1/partner/webhook-endpoints/${encodeURIComponent(endpointId)}/redeliver`,
        json: { event_id: eventId },
        signed: true,
        replaySafe: true,
      },
      options,
    );
    return resultOf<WebhookDelivery>(response);
  }
}
