// `npm run bench:perf`: where the CPU of Counterpart's API processes and of the reference's (or,
// for the sandbox, the bare route's) goes, side by side, per request, counted by Linux `perf` from
// the kernel's own on-CPU samples.
//
// Why not V8's profiler alone (`npm run bench:profile`): it samples a thread at intervals of wall
// time, so a thread that is runnable but not running (preempted on the way out of a system call,
// as happens on a busy machine when a socket write wakes the PostgreSQL backend it writes to) is
// counted, at its next run, in the function it was in. perf's `cpu-clock` counts a process only
// while it is on a CPU, kernel time included, so the shares it gives are shares of the CPU.
//
// It runs one scenario of `npm run bench` (BENCH_ONLY=PERF_SCENARIO, the service from the sources
// so that samples carry their files, every Node process with --perf-basic-prof so that perf can name
// JavaScript functions), and in each measured run whose label starts with PERF_MATCH it records
// the side's process tree (`perf record -g -e cpu-clock -p …`) for PERF_SECONDS seconds, starting
// a second into the measured run. The requests of the window are the run's mean rate × the window (from
// bench/results/latest-<scenario>.json). Each sample is put in a bucket:
//   - "Ed25519 verification": under node:crypto's verifyOneShot, or in libsodium's add-on
//     (sodium-native, the service's default verifier);
//   - "GC": V8's collectors (scavenges, marking, sweeping), whichever thread ran them;
//   - "PostgreSQL in WebAssembly (PGlite)": code of a WebAssembly module (the sandbox's database);
//   - else the bucket of its nearest JavaScript frame's file (bench/buckets.ts, the same buckets as
//     bench:profile), a frame of Node's own deferring to its nearest caller in our code or a
//     library's;
//   - else "V8 and native, no JavaScript caller" or, for the kernel, "kernel, no JavaScript caller"
//     (interrupts, scheduling).
// It prints µs per request per bucket for both sides, with the part spent in the kernel, and the
// functions (nearest JavaScript frame) that cost each side most.
//
// Environment: PERF_SCENARIO (deposits, reads, trading, or foundation: the PGlite sandbox's signed
// asset-pairs against the bare route, the same answer with no signature and no SQL; default
// deposits), PERF_MATCH (a label prefix; default the scenario's first path: "deposits",
// "asset-pairs", "quote", a trading run's "quote → execute pairs", whose figures are per pair),
// PERF_SECONDS (default 8, at most the runs' BENCH_DURATION_S less 2), PERF_TOP (functions listed,
// default 15).
// Needs `perf` on PATH and the right to record other processes (root, or
// kernel.perf_event_paranoid ≤ 0). Figures from perf's symbol maps are approximate: V8 reuses
// addresses of code it frees, and a map names the last function compiled at an address.

import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { bucketOfFile, httpBucket, wasmBucket } from "./buckets.ts";
import { fixed, printTable, repoRoot, resultsDir, sleep } from "./lib.ts";
import { intFromEnv, processTable, processTree } from "./proc.ts";

const defaults: Record<string, string> = {
  deposits: "deposits",
  reads: "asset-pairs",
  trading: "quote",
  foundation: "asset-pairs",
};
const scenario = process.env.PERF_SCENARIO || "deposits";
/** What one operation of the scenario is (the JSON's "per_request" figures are per one of them). */
const unit = scenario === "trading" ? "pair (a quote and its execute)" : "request";
const match = process.env.PERF_MATCH || defaults[scenario];
if (match === undefined) {
  process.stderr.write(`bench:perf: PERF_SCENARIO must be one of ${Object.keys(defaults).join(", ")}\n`);
  process.exit(2);
}
const seconds = intFromEnv("PERF_SECONDS", 8, 2, 60);
const top = intFromEnv("PERF_TOP", 15, 0, 100);
const hz = 997;

/** The sides of a compared run, told apart by the process the bench started for each. */
const sides = {
  Counterpart: (title: string) =>
    /packages\/cli\/src\/main\.ts serve|packages\/server\/dist\/server\.js/.test(title),
  reference: (title: string) => /bench\/reference-server\.ts/.test(title),
  "bare route": (title: string) => /bench\/bare-server\.ts/.test(title),
} as const;
type SideName = keyof typeof sides;
/**
 * What Counterpart is compared with: the reference, or in `foundation` (the PGlite sandbox) the
 * bare route, the same answer with no signature and no SQL.
 */
const other: SideName = scenario === "foundation" ? "bare route" : "reference";
const compared = ["Counterpart", other] as const;

interface Window {
  label: string;
  pids: number[];
  file: string;
}

function checkPerf(scratch: string): void {
  try {
    execFileSync(
      "perf",
      ["record", "-q", "-e", "cpu-clock", "-o", path.join(scratch, "probe.data"), "--", "true"],
      {
        stdio: "pipe",
      },
    );
  } catch (err) {
    process.stderr.write(
      `bench:perf: perf cannot record here (${(err as Error).message.split("\n")[0]}); it needs perf on PATH and root or kernel.perf_event_paranoid <= 0\n`,
    );
    process.exit(2);
  }
}

/** Every process of the run seen, whose perf map (/tmp/perf-<pid>.map) is removed at the end. */
const seen = new Set<number>();

/** Runs the scenario and records each matching measured run; returns the windows recorded. */
async function runAndRecord(scratch: string): Promise<Window[]> {
  const env = {
    ...process.env,
    BENCH_ONLY: scenario,
    BENCH_ENTRY: "sources",
    // One measured run per side, long enough for a window (the reads' sides are otherwise
    // alternated in slices of 2 s, as are the deposits' and the trades').
    BENCH_SLICES: "1",
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --perf-basic-prof`.trim(),
  };
  const child = spawn(process.execPath, ["bench/run.ts"], {
    cwd: repoRoot,
    env,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const started = new RegExp(
    `^bench: (${match}[^:]*) \\((${compared.join("|")})\\): warm-up (\\d+) s, then (\\d+) s`,
  );
  const windows: Window[] = [];
  seen.add(child.pid ?? 0);
  const recordings: Promise<void>[] = [];
  // A window that could not be recorded fails the run once the bench is over, not before.
  let failure: unknown = null;
  const lines = readline.createInterface({ input: child.stdout });
  lines.on("line", (line) => {
    process.stdout.write(`${line}\n`);
    const m = started.exec(line);
    if (m === null) return;
    const [, label, side, warmS, runS] = m as unknown as [string, string, SideName, string, string];
    if (Number(runS) < seconds + 2) {
      process.stdout.write(
        `bench:perf: ${label} runs ${runS} s, too short for a ${seconds} s window after 1 s\n`,
      );
      return;
    }
    recordings.push(
      (async () => {
        // A second into the measured run, after its warm-up (0 s but in `foundation`).
        await sleep((Number(warmS) + 1) * 1_000);
        const roots = processTable().filter((p) => p.ppid === child.pid && sides[side](p.title));
        const pids = roots.flatMap((r) => processTree(r.pid));
        for (const pid of processTree(child.pid ?? 0)) seen.add(pid);
        if (pids.length === 0) throw new Error(`no process of ${side} found for ${label}`);
        const file = path.join(scratch, `${windows.length}.data`);
        windows.push({ label: `${label} (${side})`, pids, file });
        execFileSync(
          "perf",
          [
            "record",
            "-q",
            "-g",
            "-e",
            "cpu-clock",
            "-F",
            String(hz),
            "-p",
            pids.join(","),
            "-o",
            file,
            "--",
            "sleep",
            String(seconds),
          ],
          {
            stdio: ["ignore", "ignore", "inherit"],
          },
        );
        // The names as they stood at the window's end: code made later may reuse its addresses.
        for (const pid of pids) {
          const map = `/tmp/perf-${pid}.map`;
          if (fs.existsSync(map)) fs.copyFileSync(map, `${file}.${pid}.map`);
        }
      })().catch((err: unknown) => {
        failure ??= err;
      }),
    );
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  await Promise.all(recordings);
  if (failure !== null) throw failure;
  if (code !== 0) throw new Error(`npm run bench (${scenario}) exited with ${code}`);
  return windows;
}

/** Requests per second of each measured run, by label, from the scenario's results. */
function ratesByLabel(): Map<string, number> {
  const results = JSON.parse(fs.readFileSync(path.join(resultsDir, `latest-${scenario}.json`), "utf8")) as {
    report: { targets: { label: string; reqPerSecMean: number }[] };
  };
  return new Map(results.report.targets.map((t) => [t.label, t.reqPerSecMean]));
}

interface Frame {
  sym: string;
  dso: string;
}

/**
 * Puts back V8's map for perf of each process of `window` as it stood at the window's end, with no
 * two entries overlapping, the latest kept: V8 writes an entry for each piece of code it makes and
 * none when it frees one, so an address whose code was freed and reused has two names, and perf may
 * pick either; the later is the code that was there.
 */
function latestNames(window: Window): void {
  for (const pid of window.pids) {
    const snapshot = `${window.file}.${pid}.map`;
    if (!fs.existsSync(snapshot)) continue;
    const entries = fs
      .readFileSync(snapshot, "utf8")
      .split("\n")
      .flatMap((line) => {
        const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
        return m === null ? [] : [{ start: BigInt(`0x${m[1]}`), size: BigInt(`0x${m[2]}`), line }];
      });
    // From the latest: an entry overlapping one kept (a later one) names code that was there before.
    const kept: { start: bigint; end: bigint; line: string }[] = []; // sorted by start
    for (let i = entries.length - 1; i >= 0; i--) {
      const e = entries[i]!;
      const end = e.start + e.size;
      let lo = 0;
      let hi = kept.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (kept[mid]!.start < e.start) lo = mid + 1;
        else hi = mid;
      }
      const before = kept[lo - 1];
      const after = kept[lo];
      if ((before !== undefined && before.end > e.start) || (after !== undefined && after.start < end))
        continue;
      kept.splice(lo, 0, { start: e.start, end, line: e.line });
    }
    fs.writeFileSync(`/tmp/perf-${pid}.map`, `${kept.map((k) => k.line).join("\n")}\n`);
  }
}

/** perf's samples of `file`: each one's frames, innermost first. */
async function samplesOf(file: string): Promise<Frame[][]> {
  const script = spawn("perf", ["script", "-i", file, "-F", "ip,sym,dso"], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  const out: Frame[][] = [];
  let current: Frame[] | null = null;
  for await (const line of readline.createInterface({ input: script.stdout })) {
    const m = /^\s*[0-9a-f]+ (.*) \((.*)\)$/.exec(line);
    if (m !== null) {
      if (current === null) {
        current = [];
        out.push(current);
      }
      current.push({ sym: m[1] ?? "", dso: m[2] ?? "" });
    } else if (line.trim() === "") {
      current = null;
    }
  }
  return out;
}

const gcFrame =
  /Scavenger|MarkCompact|ConcurrentMarking|MarkingVisitor|MinorMark|Sweeper|Heap::CollectGarbage|Evacuat/;

const wasmFrame = /^JS:\S+-\d+-(liftoff|turbofan)$/;

/** A JavaScript frame of perf's map: "JS:*name file:line:col" (the marker says how it was compiled). */
function jsFrame(sym: string): { fn: string; url: string } | null {
  const m = /^JS:[*~^+]?(\S*) (.*?)(?::\d+:\d+)?$/.exec(sym);
  return m === null ? null : { fn: m[1] ?? "", url: m[2] ?? "" };
}

function classify(frames: Frame[]): { bucket: string; fn: string } {
  if (frames.some((f) => /^JS:\S*verifyOneShot /.test(f.sym)))
    return { bucket: "Ed25519 verification", fn: "verifyOneShot" };
  if (frames.some((f) => /sodium-native/.test(f.dso) || /crypto_sign_verify_detached/.test(f.sym)))
    return { bucket: "Ed25519 verification", fn: "libsodium (sodium-native)" };
  if (frames.slice(0, 16).some((f) => gcFrame.test(f.sym))) return { bucket: "GC", fn: "(GC)" };
  let nodeOwn: { fn: string; url: string } | null = null;
  for (const f of frames) {
    // Code of a WebAssembly module (PGlite's PostgreSQL), named by V8 "<function>-<index>-<tier>".
    if (wasmFrame.test(f.sym)) return { bucket: wasmBucket, fn: f.sym.slice(3) };
    const js = jsFrame(f.sym);
    if (js === null) continue;
    const place = js.url.replace(/^file:\/\//, "");
    if (place.startsWith("node:") || !place.startsWith("/")) {
      nodeOwn ??= js;
      continue;
    }
    const where = place.replace(/^.*\/(node_modules|packages|bench)\//, "$1/");
    return { bucket: bucketOfFile(place, js.fn), fn: `${js.fn || "(anonymous)"} ${where}` };
  }
  if (nodeOwn !== null) return { bucket: httpBucket, fn: `${nodeOwn.fn || "(anonymous)"} ${nodeOwn.url}` };
  const leaf = frames[0];
  if (leaf?.dso.includes("kernel")) return { bucket: "kernel, no JavaScript caller", fn: leaf.sym };
  return { bucket: "V8 and native, no JavaScript caller", fn: leaf?.sym ?? "?" };
}

interface Tally {
  samples: number;
  requests: number;
  buckets: Map<string, { all: number; kernel: number }>;
  functions: Map<string, number>;
}

async function tally(window: Window, rate: number): Promise<Tally> {
  latestNames(window);
  const t: Tally = { samples: 0, requests: rate * seconds, buckets: new Map(), functions: new Map() };
  for (const frames of await samplesOf(window.file)) {
    const { bucket, fn } = classify(frames);
    const inKernel = frames[0]?.dso.includes("kernel") === true;
    const b = t.buckets.get(bucket) ?? { all: 0, kernel: 0 };
    b.all++;
    if (inKernel) b.kernel++;
    t.buckets.set(bucket, b);
    t.functions.set(fn, (t.functions.get(fn) ?? 0) + 1);
    t.samples++;
  }
  return t;
}

/** µs of CPU per request for `samples` samples at `hz` over `requests` requests. */
const perRequest = (samples: number, requests: number) => (samples * (1e6 / hz)) / Math.max(requests, 1);

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "counterpart-bench-perf-"));
const startedMs = Date.now();
try {
  checkPerf(scratch);
  const windows = await runAndRecord(scratch);
  const rates = ratesByLabel();
  const labels = [...new Set(windows.map((w) => w.label.replace(/ \([^()]*\)$/, "")))];
  // A run that recorded nothing, or one side only, or a side whose rate the results do not hold,
  // has no comparison to print: it fails rather than write an empty or one-sided report.
  if (labels.length === 0) {
    throw new Error(`no measured run of ${scenario} matched PERF_MATCH "${match}": nothing was recorded`);
  }
  const report: Record<string, unknown> = {};
  for (const label of labels) {
    const pair = new Map<SideName, Tally>();
    for (const side of compared) {
      const w = windows.find((x) => x.label === `${label} (${side})`);
      const rate = rates.get(`${label} (${side})`);
      if (w === undefined) throw new Error(`${label}: no window of ${side} was recorded`);
      if (rate === undefined) throw new Error(`${label}: the results hold no rate for ${side}`);
      pair.set(side, await tally(w, rate));
    }
    const cp = pair.get("Counterpart");
    const ref = pair.get(other);
    const names = [...new Set([...(cp?.buckets.keys() ?? []), ...(ref?.buckets.keys() ?? [])])];
    const cell = (t: Tally | undefined, name: string) => {
      const b = t?.buckets.get(name);
      return t === undefined || b === undefined
        ? "-"
        : `${fixed(perRequest(b.all, t.requests), 1)} (${fixed(perRequest(b.kernel, t.requests), 1)})`;
    };
    const total = (t: Tally | undefined) =>
      t === undefined ? Number.NaN : perRequest(t.samples, t.requests);
    const rows = names
      .map((n) => ({ n, us: perRequest(cp?.buckets.get(n)?.all ?? 0, cp?.requests ?? 1) }))
      .sort((a, b) => b.us - a.us)
      .map(({ n }) => [n, cell(cp, n), cell(ref, n)]);
    rows.push(["all", fixed(total(cp), 1), fixed(total(ref), 1)]);
    printTable(
      `${label}: CPU µs per ${unit} by where it went, perf, ${seconds} s of each side (in parentheses: in the kernel)`,
      ["bucket", "Counterpart", other],
      rows,
    );
    for (const [side, t] of pair) {
      if (top === 0) continue;
      printTable(
        `${label} (${side}): the functions that cost most, µs per ${unit} (nearest JavaScript frame)`,
        ["µs", "function"],
        [...t.functions]
          .sort((a, b) => b[1] - a[1])
          .slice(0, top)
          .map(([f, n]) => [fixed(perRequest(n, t.requests), 1), f.slice(0, 110)]),
      );
    }
    report[label] = Object.fromEntries(
      [...pair].map(([side, t]) => [
        side,
        {
          requests_in_window: t.requests,
          cpu_us_per_request: perRequest(t.samples, t.requests),
          buckets_us_per_request: Object.fromEntries(
            [...t.buckets].map(([n, b]) => [
              n,
              { all: perRequest(b.all, t.requests), kernel: perRequest(b.kernel, t.requests) },
            ]),
          ),
        },
      ]),
    );
  }
  const out = path.join(resultsDir, `latest-perf-${scenario}.json`);
  fs.writeFileSync(out, `${JSON.stringify({ scenario, match, seconds, unit, report }, null, 1)}\n`);
  process.stdout.write(`\nperf: figures in ${path.relative(repoRoot, out)}\n`);
} finally {
  fs.rmSync(scratch, { recursive: true, force: true });
  // V8 writes its map for perf to /tmp whatever TMPDIR says.
  for (const pid of seen) fs.rmSync(`/tmp/perf-${pid}.map`, { force: true });
  // Node 24's --perf-basic-prof also has V8 write an isolate-<address>-<pid>-v8.log into each
  // process's working directory, the repository's root (V8's --logfile is not allowed in
  // NODE_OPTIONS); those this run's processes wrote go too.
  for (const entry of fs.readdirSync(repoRoot)) {
    if (!/^isolate-0x[0-9a-f]+-\d+-v8\.log$/.test(entry)) continue;
    const file = path.join(repoRoot, entry);
    if ((fs.statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? 0) >= startedMs)
      fs.rmSync(file, { force: true });
  }
}
