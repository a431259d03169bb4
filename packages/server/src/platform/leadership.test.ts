// The leadership loop with a lock of the test's making: jobs run only while the lock is held, stop
// at once when it is lost, and start again when it is taken again; an outage is waited out.

import assert from "node:assert/strict";
import { test } from "node:test";
import { type LeaderLock, Leadership } from "./leadership.ts";

const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400 && !cond(); i++) await tick();
  assert.ok(cond(), what);
}

/** A lock one holder at a time can take; `kill()` loses it as a dead connection would. */
function fakeLock() {
  let holder: { lose: () => void } | null = null;
  let failing = false;
  let tries = 0;
  return {
    get tries() {
      return tries;
    },
    get held() {
      return holder !== null;
    },
    fail(on: boolean) {
      failing = on;
    },
    kill() {
      holder?.lose();
    },
    /** Another process holds it (or lets it go). */
    takeElsewhere(on: boolean) {
      holder = on ? { lose: () => {} } : null;
    },
    async tryLock(): Promise<LeaderLock | null> {
      tries++;
      if (failing) throw new Error("database unavailable");
      if (holder !== null) return null;
      let lose = () => {};
      const lost = new Promise<void>((r) => (lose = r));
      const me = {
        lose: () => {
          if (holder === me) holder = null;
          lose();
        },
      };
      holder = me;
      return { lost, release: async () => me.lose() };
    },
  };
}

function fakeJobs() {
  const events: string[] = [];
  let running = false;
  return {
    events,
    get running() {
      return running;
    },
    start() {
      running = true;
      events.push("start");
    },
    async stop() {
      running = false;
      events.push("stop");
    },
  };
}

const quiet = { info() {}, warn() {} };

test("leads when the lock is free, stops its jobs at once on loss, and leads again", async () => {
  const lock = fakeLock();
  const jobs = fakeJobs();
  const leadership = new Leadership({
    job: "test job",
    tryLock: () => lock.tryLock(),
    jobs,
    logger: quiet,
    retryMs: 10,
  });
  leadership.start();
  await until(() => leadership.isLeader && jobs.running, "leads");
  lock.kill();
  // Stopped in the same turn as the loss is seen, before any retry could hand the lock on.
  await tick(0);
  assert.equal(jobs.running, false);
  assert.equal(leadership.isLeader, false);
  await until(() => leadership.isLeader && jobs.running, "leads again");
  assert.deepEqual(jobs.events, ["start", "stop", "start"]);
  await leadership.stop();
  assert.equal(jobs.running, false);
  assert.equal(lock.held, false, "lock given up on stop");
});

test("stands by while another holds the lock, and takes over when it is let go", async () => {
  const lock = fakeLock();
  lock.takeElsewhere(true);
  const jobs = fakeJobs();
  const lines: string[] = [];
  const logger = {
    info: (_o: object, m: string) => lines.push(m),
    warn: (_o: object, m: string) => lines.push(m),
  };
  const leadership = new Leadership({
    job: "test job",
    tryLock: () => lock.tryLock(),
    jobs,
    logger,
    retryMs: 10,
  });
  leadership.start();
  await until(() => lock.tries >= 3, "keeps trying");
  assert.equal(jobs.running, false);
  assert.equal(lines.filter((l) => l.includes("standing by")).length, 1, "standby logged once");
  lock.takeElsewhere(false);
  await until(() => jobs.running, "takes over");
  await leadership.stop();
  assert.ok(lines.some((l) => l.includes("this process leads")));
});

test("a database outage is waited out, never thrown", async () => {
  const lock = fakeLock();
  lock.fail(true);
  const jobs = fakeJobs();
  const leadership = new Leadership({
    job: "test job",
    tryLock: () => lock.tryLock(),
    jobs,
    logger: quiet,
    retryMs: 10,
  });
  leadership.start();
  await until(() => lock.tries >= 3, "keeps trying through the outage");
  assert.equal(jobs.running, false);
  lock.fail(false);
  await until(() => jobs.running, "leads once the database answers");
  await leadership.stop();
});

test("stop() during a try gives the lock back and starts nothing", async () => {
  let grant = (_l: LeaderLock) => {};
  let released = false;
  const jobs = fakeJobs();
  const leadership = new Leadership({
    job: "test job",
    tryLock: () => new Promise<LeaderLock>((r) => (grant = r)),
    jobs,
    logger: quiet,
    retryMs: 10,
  });
  leadership.start();
  await tick(20);
  const stopped = leadership.stop();
  grant({
    lost: new Promise(() => {}),
    release: async () => {
      released = true;
    },
  });
  await stopped;
  assert.equal(released, true);
  assert.deepEqual(jobs.events, []);
});
