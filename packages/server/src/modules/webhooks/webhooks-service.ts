// Webhooks (docs/reference.md, "Webhooks"): a partner's endpoints, their deliveries and attempts,
// a test event, redelivery on demand; the operator's list and disable; and the worker every API
// process runs, which turns new events into deliveries and delivers what is due, sharing the work
// with the other processes through the database (FOR UPDATE SKIP LOCKED), without a coordinator.

import { limits } from "../../config/limits.ts";
import type { Db } from "../../db/database.ts";
import { isoFromMs } from "../../db/time.ts";
import { inTransaction } from "../../db/transaction.ts";
import type { Clock } from "../../platform/clock.ts";
import type { Random } from "../../platform/random.ts";
import { isUuid } from "../../platform/uuid.ts";
import { type AuditNote, missingReason, recordAudit } from "../audit/index.ts";
import type { EventsService, EventType } from "../events/index.ts";
import { checkWebhookUrl, type Resolver, resolveTarget, type UrlPolicy } from "./url-safety.ts";
import { postWebhook, type SendOutcome } from "./webhook-sender.ts";
import type { WebhookSigner } from "./webhook-signer.ts";
import {
  type AdminWebhookEndpointView,
  deliveryView,
  endpointView,
  type WebhookDeliveryView,
  type WebhookEndpointView,
} from "./webhook-views.ts";
import {
  type ClaimedDelivery,
  claimDue,
  countEndpoints,
  deleteEndpoint,
  findEndpoint,
  findEndpointForUpdate,
  insertDeliveries,
  insertEndpoint,
  listDeliveries,
  listEndpoints,
  lockEndpointsToDispatch,
  moveEndpointCursor,
  type NewDelivery,
  recordAttempt,
  redeliver,
  setEndpointStatus,
} from "./webhooks-store.ts";

export type WebhookError = "not_found" | { invalidUrl: string } | "too_many_endpoints";

export interface WorkerLogger {
  warn(obj: object, msg: string): void;
}

export interface WebhookTimings {
  leaseMs: number;
  pollMs: number;
  timeoutMs: number;
  retryPeriodMs: number;
  backoffFirstMs: number;
  backoffMaxMs: number;
}

const defaultTimings: WebhookTimings = {
  leaseMs: limits.webhookLeaseMs,
  pollMs: limits.webhookPollMs,
  timeoutMs: limits.webhookTimeoutMs,
  retryPeriodMs: limits.webhookRetryPeriodMs,
  backoffFirstMs: limits.webhookBackoffFirstMs,
  backoffMaxMs: limits.webhookBackoffMaxMs,
};

/** The wait before attempt n + 1 after n failed ones: doubling from the first, capped, with jitter. */
export function backoffMs(failedAttempts: number, t: WebhookTimings, unit: number): number {
  const raw = Math.min(t.backoffFirstMs * 2 ** Math.max(0, failedAttempts - 1), t.backoffMaxMs);
  // Between half and all of it, so that deliveries that failed together do not return together.
  return Math.round(raw * (0.5 + unit / 2));
}

export class WebhooksService {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #events: EventsService;
  readonly #signer: WebhookSigner;
  readonly #policy: UrlPolicy;
  readonly #resolver: Resolver;
  readonly #origin: string;
  readonly #t: WebhookTimings;
  // The worker's state: deliveries in flight here, by endpoint.
  #running = false;
  #timer: NodeJS.Timeout | null = null;
  #tick: Promise<void> = Promise.resolve();
  /** A delivery ended while a round ran: the next round starts at once, not after pollMs. */
  #wakeRequested = false;
  readonly #inFlight = new Map<number, { endpointId: string; done: Promise<void> }>();
  #logger: WorkerLogger | null = null;

  constructor(deps: {
    db: Db;
    clock: Clock;
    random: Random;
    events: EventsService;
    signer: WebhookSigner;
    policy: UrlPolicy;
    resolver: Resolver;
    /** The origin of document links in payloads. */
    origin: string;
    timings?: Partial<WebhookTimings>;
  }) {
    this.#db = deps.db;
    this.#clock = deps.clock;
    this.#random = deps.random;
    this.#events = deps.events;
    this.#signer = deps.signer;
    this.#policy = deps.policy;
    this.#resolver = deps.resolver;
    this.#origin = deps.origin;
    this.#t = { ...defaultTimings, ...deps.timings };
  }

  publicKeys() {
    return this.#signer.publicKeys();
  }

  // --- The partner's endpoints --------------------------------------------------------------

  /** Errors: an invalid URL (with why), too_many_endpoints. */
  async create(
    partnerId: string,
    url: string,
    eventTypes: readonly EventType[],
  ): Promise<{ ok: true; endpoint: WebhookEndpointView } | { ok: false; error: WebhookError }> {
    const checked = checkWebhookUrl(url, this.#policy);
    if (!checked.ok) return { ok: false, error: { invalidUrl: checked.reason } };
    if ((await countEndpoints(this.#db, partnerId)) >= limits.webhookEndpointsPerPartnerMax)
      return { ok: false, error: "too_many_endpoints" };
    const row = await insertEndpoint(this.#db, this.#clock, {
      id: this.#random.uuid(),
      partnerId,
      url: checked.url.href,
      eventTypes: [...new Set(eventTypes)],
    });
    return { ok: true, endpoint: endpointView(row) };
  }

  async list(partnerId: string): Promise<WebhookEndpointView[]> {
    return (await listEndpoints(this.#db, partnerId)).map(endpointView);
  }

  async get(partnerId: string, id: string): Promise<WebhookEndpointView | null> {
    const row = isUuid(id) ? await findEndpoint(this.#db, partnerId, id) : undefined;
    return row ? endpointView(row) : null;
  }

  /** Deletes the endpoint and its deliveries. false: not the partner's endpoint. */
  async delete(partnerId: string, id: string): Promise<boolean> {
    return isUuid(id) ? deleteEndpoint(this.#db, partnerId, id) : false;
  }

  /** The endpoint's latest deliveries, newest first, with their attempts; null: not the partner's. */
  async deliveries(
    partnerId: string,
    id: string,
    limit: number,
    beforeId: number | null,
  ): Promise<WebhookDeliveryView[] | null> {
    const endpoint = isUuid(id) ? await findEndpoint(this.#db, partnerId, id) : undefined;
    if (endpoint === undefined) return null;
    const { deliveries, attempts } = await listDeliveries(this.#db, id, limit, beforeId);
    return deliveries.map((d) => deliveryView(d, attempts.filter((a) => a.delivery_id === d.id).slice(-20)));
  }

  /** A webhook.test event to the endpoint, due now. null: not the partner's endpoint. */
  async sendTest(partnerId: string, id: string): Promise<WebhookDeliveryView | null> {
    const endpoint = isUuid(id) ? await findEndpoint(this.#db, partnerId, id) : undefined;
    if (endpoint === undefined) return null;
    const evtId = `evt_test_${this.#random.bytes(12).toString("base64url")}`;
    const payload = JSON.stringify({
      id: evtId,
      type: "webhook.test",
      created_at: isoFromMs(this.#clock.nowMs()),
      partner_client_id: null,
      data: { endpoint_id: id },
    });
    const [row] = await insertDeliveries(this.#db, this.#clock, [
      { endpointId: id, eventId: evtId, eventType: "webhook.test", payload },
    ]);
    return deliveryView(row!, []);
  }

  /** Sends the event to the endpoint again, now. null: no delivery of that event to that endpoint. */
  async redeliver(partnerId: string, id: string, evtId: string): Promise<WebhookDeliveryView | null> {
    const endpoint = isUuid(id) ? await findEndpoint(this.#db, partnerId, id) : undefined;
    if (endpoint === undefined) return null;
    const row = await redeliver(this.#db, this.#clock, id, evtId);
    return row ? deliveryView(row, []) : null;
  }

  // --- The operator -------------------------------------------------------------------------

  async adminList(partnerId: string | null): Promise<AdminWebhookEndpointView[]> {
    if (partnerId !== null && !isUuid(partnerId)) return [];
    return (await listEndpoints(this.#db, partnerId)).map((r) => ({
      ...endpointView(r),
      partner_id: r.partner_id,
    }));
  }

  /**
   * Disables (no delivery is made or attempted) or enables an endpoint, with its audit entry (and
   * the reason) in the same transaction. Every caller (an operator, the bearer token) must give a reason to disable one
   * (docs/decisions.md, "Audit trail"). null: no such endpoint.
   */
  async adminSetEnabled(
    id: string,
    enabled: boolean,
    note: AuditNote,
  ): Promise<WebhookEndpointView | null | "reason_required"> {
    if (!enabled && missingReason(note)) return "reason_required";
    if (!isUuid(id)) return null;
    const row = await inTransaction(this.#db, async (tx) => {
      const before = await findEndpointForUpdate(tx, id);
      if (before === undefined) return undefined;
      const after = await setEndpointStatus(tx, this.#clock, id, enabled ? "enabled" : "disabled");
      if (after === undefined) return undefined;
      await recordAudit(tx, this.#clock, note, {
        action: "webhook_endpoint.enabled",
        targetType: "webhook_endpoint",
        targetId: id,
        before: { status: before.status },
        after: { status: after.status },
      });
      return after;
    });
    return row ? endpointView(row) : null;
  }

  // --- The worker ---------------------------------------------------------------------------

  /** Starts the worker of this process: dispatch and delivery, every pollMs while idle. */
  startWorker(logger: WorkerLogger): void {
    if (this.#running) return;
    this.#running = true;
    this.#logger = logger;
    this.#schedule(0);
  }

  /** Stops taking work; resolves once the deliveries in flight here have ended (each is bounded). */
  async stopWorker(): Promise<void> {
    this.#running = false;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#tick;
    await Promise.allSettled([...this.#inFlight.values()].map((f) => f.done));
  }

  #schedule(ms: number): void {
    if (!this.#running) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#tick = this.runOnce().then(
        (busy) => {
          const again = busy || this.#wakeRequested;
          this.#wakeRequested = false;
          this.#schedule(again ? 0 : this.#t.pollMs);
        },
        (err: unknown) => {
          this.#logger?.warn({ err }, "webhook worker: a round failed; trying again");
          this.#schedule(this.#t.pollMs);
        },
      );
    }, ms);
    this.#timer.unref();
  }

  /**
   * A delivery of this process ended, so a slot is free: the next round starts now rather than
   * after pollMs (with every slot taken, a round claims nothing and the worker would otherwise
   * idle until the poll while deliveries are due). Only the timing changes, not what is claimed.
   */
  #wake(): void {
    if (!this.#running) return;
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
      this.#schedule(0);
    } else {
      this.#wakeRequested = true;
    }
  }

  /**
   * One round: new events into deliveries, then due deliveries claimed up to this process's
   * capacity and sent (not awaited). Returns whether there may be more to do at once.
   */
  async runOnce(): Promise<boolean> {
    const dispatched = await this.dispatch();
    const free = limits.webhookConcurrency - this.#inFlight.size;
    if (free <= 0) return false;
    const perEndpoint = new Map<string, number>();
    for (const f of this.#inFlight.values())
      perEndpoint.set(f.endpointId, (perEndpoint.get(f.endpointId) ?? 0) + 1);
    const busy = [...perEndpoint].filter(([, n]) => n >= limits.webhookEndpointConcurrency).map(([id]) => id);
    const claimed = await claimDue(this.#db, this.#clock, free, busy, this.#t.leaseMs);
    // One claim may hold more of one endpoint than its share: the rest wait for the lease to end
    // would be slow, so they are sent too, but a slow endpoint holds at most its own claims.
    for (const d of claimed) {
      const done = this.#deliver(d).finally(() => {
        this.#inFlight.delete(d.id);
        this.#wake();
      });
      this.#inFlight.set(d.id, { endpointId: d.endpoint_id, done });
    }
    return dispatched > 0 || claimed.length === free;
  }

  /** Waits for the deliveries this process has in flight (tests). */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.#inFlight.values()].map((f) => f.done));
  }

  /** Turns new events into deliveries for up to 20 endpoints; returns how many deliveries were made. */
  async dispatch(): Promise<number> {
    return inTransaction(this.#db, async (tx) => {
      const endpoints = await lockEndpointsToDispatch(tx, 20);
      let made = 0;
      for (const e of endpoints) {
        const { events, last } = await this.#events.after(
          tx,
          e.partner_id,
          { txid: BigInt(e.cursor_txid), seq: BigInt(e.cursor_seq) },
          e.event_types,
          limits.pageSizeMax,
          this.#origin,
        );
        if (last === null) continue;
        const deliveries: NewDelivery[] = events.map((ev) => ({
          endpointId: e.id,
          eventId: ev.id,
          eventType: ev.type,
          payload: JSON.stringify(ev),
        }));
        await insertDeliveries(tx, this.#clock, deliveries);
        await moveEndpointCursor(tx, e.id, last.txid, last.seq);
        made += deliveries.length;
      }
      return made;
    });
  }

  async #deliver(d: ClaimedDelivery): Promise<void> {
    const started = this.#clock.nowMs();
    let outcome: SendOutcome;
    try {
      const url = new URL(d.url);
      const target = await resolveTarget(url, this.#policy, this.#resolver);
      outcome = target.ok
        ? await postWebhook({
            url,
            address: target.address,
            family: target.family,
            headers: this.#signer.headers(url, d.payload, this.#clock.nowMs(), d.event_id),
            body: d.payload,
            timeoutMs: this.#t.timeoutMs,
            responseBytesMax: limits.webhookResponseBytesMax,
          })
        : { statusCode: null, error: `refused: ${target.reason}` };
    } catch {
      outcome = { statusCode: null, error: "could not be sent" };
    }
    const ok = outcome.statusCode !== null && outcome.statusCode >= 200 && outcome.statusCode < 300;
    const error = ok ? null : (outcome.error ?? `answered ${outcome.statusCode}`);
    const ageMs = this.#clock.nowMs() - Date.parse(d.created_at);
    const status = ok ? "delivered" : ageMs >= this.#t.retryPeriodMs ? "failed" : "pending";
    try {
      await inTransaction(this.#db, async (tx) => {
        await recordAttempt(tx, this.#clock, {
          deliveryId: d.id,
          statusCode: outcome.statusCode,
          error,
          durationMs: Math.max(0, this.#clock.nowMs() - started),
          outcome:
            status === "pending"
              ? { status, retryInMs: backoffMs(d.attempts, this.#t, this.#unit()) }
              : { status },
        });
        if (status === "failed")
          await setEndpointStatus(tx, this.#clock, d.endpoint_id, "failing", ["enabled"]);
        if (status === "delivered")
          await setEndpointStatus(tx, this.#clock, d.endpoint_id, "enabled", ["failing"]);
      });
    } catch (err) {
      // The lease ends and the delivery is attempted again: at least once, never lost.
      this.#logger?.warn({ err, delivery: d.id }, "webhook worker: could not record an attempt");
    }
  }

  /** A uniform number in [0, 1) from the injected randomness. */
  #unit(): number {
    return this.#random.bytes(4).readUInt32BE(0) / 2 ** 32;
  }
}
