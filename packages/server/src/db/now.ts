// "Now" inside SQL. With the system clock it is the database's own now(), so several API
// processes judge quote expiry and price staleness by one clock (docs/decisions.md "Hardening"); with an
// injected clock (tests) it is that clock's instant.

import { type RawBuilder, sql } from "kysely";
import { type Clock, systemClock } from "../platform/clock.ts";
import { isoFromMs } from "./time.ts";

export function dbNow(clock: Clock): RawBuilder<string> {
  if (clock === systemClock) return sql<string>`now()`;
  return sql<string>`${isoFromMs(clock.nowMs())}::timestamptz`;
}
