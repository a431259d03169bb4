// Time as a port: the service asks a Clock, so signature windows, quote expiry and price
// staleness can be driven by tests without sleeping.

export interface Clock {
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };

/** A clock that only moves when told to. */
export class ManualClock implements Clock {
  #ms: number;
  constructor(startMs: number = Date.UTC(2026, 10, 21, 9, 30, 0)) {
    this.#ms = startMs;
  }
  nowMs(): number {
    return this.#ms;
  }
  set(ms: number): void {
    this.#ms = ms;
  }
  advance(ms: number): void {
    this.#ms += ms;
  }
}
