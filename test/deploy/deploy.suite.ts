// The production shape on one machine (docs/operations.md, "Deploying"): a fresh PostgreSQL
// database, three API processes started from the built bundle (`npm run build:server`; only the
// first runs the admin listener), and nginx in front of them, with its configuration, pid file and
// logs in a temporary folder and run as a foreground child (no root paths). Through nginx:
//  - signed traffic: reads and deposits from six concurrent clients, one connection per request
//    (a reload of nginx closes the idle keep-alive connections of its clients, and a request sent
//    on one as it closes is lost before nginx reads it: docs/operations.md, "Rolling restart"),
//    with `TRUST_PROXY` set to nginx's address and the partner's IP allow-list judged
//    on the client's address nginx passes on (X-Forwarded-For); a client at another address, or
//    one that writes its own X-Forwarded-For, is refused;
//  - a rolling restart of all three processes while the traffic runs, as the recipe does it: the
//    process is taken out of nginx's upstream (reload), stopped with SIGTERM (it drains and exits
//    0), started again, waited for on /readyz, and put back (reload). Not one request fails, and
//    the balance is exactly the sum of the deposits answered 200;
//  - /readyz of the three processes: exactly one leads each background job, before and after.
//
// Run: npm run test:deploy (CI runs it; it needs nginx, Debian's package, which .ci/run installs
// when missing, and PostgreSQL on DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres,
// where it creates a database of its own and drops it after). It is not named *.test.ts: it builds
// the bundle and starts real processes, and `npm test` runs on PGlite.

import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { generateKeyPair, parseDecimal, signRequest } from "@counterpart/protocol";
import pg from "pg";
import { limits } from "../../packages/server/src/config/limits.ts";
import { clientPayload } from "../../packages/server/src/testing/fixtures.ts";

const root = path.resolve(import.meta.dirname, "../..");
const bundle = path.join(root, "packages/server/dist/server.js");
const baseUrl = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const adminToken = "deploy-suite-admin-token-0123456789";
/** nginx connects to the API processes from this address; TRUST_PROXY names it and only it. */
const proxyAddress = "127.0.0.2";
/** A client at another loopback address than 127.0.0.1, the one the partner's allow-list holds. */
const strangerAddress = "127.0.0.3";
/** Debian's nginx lives in /usr/sbin, which is not on every PATH; NGINX names another binary. */
const nginxBinary = process.env.NGINX || (fs.existsSync("/usr/sbin/nginx") ? "/usr/sbin/nginx" : "nginx");
/** Every wait is bounded; generously, since CI machines are shared. */
const startMs = 60_000;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

interface Answer {
  status: number;
  body: string;
}

/** One HTTP request; `agent` keeps connections alive between calls, `localAddress` picks the source. */
function request(
  port: number,
  options: {
    method: string;
    path: string;
    headers?: Record<string, string>;
    body?: string;
    agent?: http.Agent;
    localAddress?: string;
  },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        method: options.method,
        path: options.path,
        headers: options.headers,
        agent: options.agent ?? false,
        localAddress: options.localAddress,
        timeout: 30_000,
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error("request timed out")));
    req.on("error", reject);
    req.end(options.body);
  });
}

interface ApiProcess {
  port: number;
  child: ChildProcess;
  output(): string;
}

interface Shape {
  dir: string;
  databaseUrl: string;
  apiPorts: number[];
  adminPort: number;
  nginxPort: number;
  nginx: ChildProcess | null;
  nginxOutput: string;
  api: (ApiProcess | null)[];
}

function startApi(shape: Shape, index: number): ApiProcess {
  const port = shape.apiPorts[index]!;
  const dataDir = path.join(shape.dir, `api-${index}`);
  fs.mkdirSync(dataDir, { recursive: true });
  // With V8's options as docs/operations.md's unit gives them to a process with WORKERS=1.
  const v8Options = [
    `--max-semi-space-size=${limits.workerSemiSpaceMib}`,
    `--heap-growing-percent=${limits.workerHeapGrowingPercent}`,
  ];
  const child = spawn(process.execPath, [...v8Options, bundle], {
    cwd: dataDir,
    env: {
      PATH: process.env.PATH ?? "",
      DATABASE_URL: shape.databaseUrl,
      HOST: "127.0.0.1",
      PORT: String(port),
      ADMIN_PORT: index === 0 ? String(shape.adminPort) : "off",
      ADMIN_TOKEN: adminToken,
      DATA_DIR: dataDir,
      TRUST_PROXY: proxyAddress,
      PRICE_FEED: "simulated",
      LOG_LEVEL: "warn",
      // docs/operations.md's production value: the bundle must load libsodium's add-on or not start.
      SIGNATURE_VERIFIER: "libsodium",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.on("error", (err) => (out += `\nspawn error: ${err.message}\n`));
  child.stdout?.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr?.on("data", (c: Buffer) => (out += c.toString()));
  return { port, child, output: () => out };
}

async function readyz(port: number): Promise<{ status: number; body: Record<string, unknown> | null }> {
  try {
    const answer = await request(port, { method: "GET", path: "/readyz" });
    return { status: answer.status, body: JSON.parse(answer.body) as Record<string, unknown> };
  } catch {
    return { status: 0, body: null };
  }
}

async function waitReady(api: ApiProcess): Promise<void> {
  const deadline = Date.now() + startMs;
  while ((await readyz(api.port)).status !== 200) {
    if (api.child.exitCode !== null) throw new Error(`API process exited:\n${api.output()}`);
    if (Date.now() > deadline) throw new Error(`API process not ready in ${startMs} ms:\n${api.output()}`);
    await sleep(50);
  }
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

async function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<number | null> {
  const done = exited(child);
  child.kill(signal);
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  try {
    return await done;
  } finally {
    clearTimeout(timer);
  }
}

/** nginx's configuration: the processes not in `down` are the upstream, keep-alive on both sides. */
function nginxConfig(shape: Shape, down: ReadonlySet<number>): string {
  const d = shape.dir;
  const servers = shape.apiPorts
    .map((port, i) => `    server 127.0.0.1:${port}${down.has(i) ? " down" : ""};`)
    .join("\n");
  return `worker_processes 1;
daemon off;
pid ${d}/nginx.pid;
error_log ${d}/nginx-error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path ${d}/nginx-body;
  proxy_temp_path ${d}/nginx-proxy;
  fastcgi_temp_path ${d}/nginx-fastcgi;
  uwsgi_temp_path ${d}/nginx-uwsgi;
  scgi_temp_path ${d}/nginx-scgi;
  upstream counterpart {
${servers}
    keepalive 32;
  }
  server {
    listen 127.0.0.1:${shape.nginxPort};
    client_max_body_size 12m;
    location / {
      proxy_pass http://counterpart;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_bind ${proxyAddress};
      proxy_connect_timeout 2s;
      proxy_read_timeout 30s;
    }
  }
}
`;
}

function writeNginxConfig(shape: Shape, down: ReadonlySet<number>): void {
  fs.writeFileSync(path.join(shape.dir, "nginx.conf"), nginxConfig(shape, down));
}

/** The pids of the processes whose parent is `parent` (nginx's workers). */
function childrenOf(parent: number): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[1]) === parent) pids.push(Number(entry));
    } catch {
      // The process ended while being read.
    }
  }
  return pids;
}

/**
 * Reloads nginx (SIGHUP) with the configuration on disk, and resolves once the workers of the old
 * configuration have finished their requests and exited: from then on no connection of nginx's
 * reaches a process left out of the upstream.
 */
async function reloadNginx(shape: Shape): Promise<void> {
  const master = shape.nginx!.pid!;
  const old = new Set(childrenOf(master));
  shape.nginx!.kill("SIGHUP");
  const deadline = Date.now() + startMs;
  for (;;) {
    const now = childrenOf(master);
    if (now.some((pid) => !old.has(pid)) && !now.some((pid) => old.has(pid))) return;
    if (Date.now() > deadline) throw new Error(`nginx did not reload:\n${shape.nginxOutput}`);
    await sleep(50);
  }
}

interface Partner {
  id: string;
  privateKeyPem: string;
}

function signed(partner: Partner, method: string, target: string, body = "") {
  return {
    ...signRequest({
      partnerId: partner.id,
      privateKey: partner.privateKeyPem,
      method,
      target,
      body,
      nowMs: Date.now(),
    }),
    ...(body === "" ? {} : { "content-type": "application/json" }),
  };
}

describe("three API processes behind nginx", () => {
  const shape: Shape = {
    dir: fs.mkdtempSync(path.join(os.tmpdir(), "cp-deploy-")),
    databaseUrl: "",
    apiPorts: [],
    adminPort: 0,
    nginxPort: 0,
    nginx: null,
    nginxOutput: "",
    api: [null, null, null],
  };
  const databaseName = `cp_deploy_${process.pid}_${Date.now()}`;
  let partner: Partner;

  before(async () => {
    execFileSync(process.execPath, [path.join(root, "scripts/build-server.ts")], {
      cwd: root,
      stdio: "inherit",
    });
    const admin = new pg.Client({ connectionString: baseUrl });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${databaseName}`);
    } finally {
      await admin.end();
    }
    const url = new URL(baseUrl);
    url.pathname = `/${databaseName}`;
    shape.databaseUrl = url.toString();
    shape.apiPorts = [await freePort(), await freePort(), await freePort()];
    shape.adminPort = await freePort();
    shape.nginxPort = await freePort();

    // The first process migrates the empty database; the others then start on a current schema.
    shape.api[0] = startApi(shape, 0);
    await waitReady(shape.api[0]);
    for (const i of [1, 2]) shape.api[i] = startApi(shape, i);
    for (const i of [1, 2]) await waitReady(shape.api[i]!);

    writeNginxConfig(shape, new Set());
    const nginx = spawn(
      nginxBinary,
      [
        "-p",
        shape.dir,
        "-e",
        path.join(shape.dir, "nginx-error.log"),
        "-c",
        path.join(shape.dir, "nginx.conf"),
      ],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    shape.nginx = nginx;
    nginx.on("error", (err) => (shape.nginxOutput += `\nspawn error: ${err.message}\n`));
    nginx.stdout?.on("data", (c: Buffer) => (shape.nginxOutput += c.toString()));
    nginx.stderr?.on("data", (c: Buffer) => (shape.nginxOutput += c.toString()));
    const deadline = Date.now() + startMs;
    while ((await readyz(shape.nginxPort)).status !== 200) {
      if (nginx.exitCode !== null) throw new Error(`nginx exited:\n${shape.nginxOutput}`);
      if (Date.now() > deadline) throw new Error(`nginx did not answer:\n${shape.nginxOutput}`);
      await sleep(50);
    }

    // A partner whose allow-list holds the clients' address, 127.0.0.1, and one client of it.
    const keys = generateKeyPair();
    const created = await request(shape.adminPort, {
      method: "POST",
      path: "/admin/partners",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "Deploy", public_key_pem: keys.publicKeyPem, allowed_ips: ["127.0.0.1"] }),
    });
    assert.equal(created.status, 201, created.body);
    partner = {
      id: (JSON.parse(created.body) as { result: { id: string } }).result.id,
      privateKeyPem: keys.privateKeyPem,
    };
    const body = JSON.stringify(clientPayload(1));
    const client = await request(shape.nginxPort, {
      method: "POST",
      path: "/v1/partner/clients",
      headers: signed(partner, "POST", "/v1/partner/clients", body),
      body,
    });
    assert.equal(client.status, 201, client.body);
  });

  after(async () => {
    if (shape.nginx !== null && shape.nginx.exitCode === null) await stopChild(shape.nginx, "SIGQUIT");
    for (const api of shape.api)
      if (api !== null && api.child.exitCode === null) await stopChild(api.child, "SIGTERM");
    const admin = new pg.Client({ connectionString: baseUrl });
    try {
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`);
    } catch {
      // Best effort: the database has a name of its own and can be dropped by hand.
    } finally {
      await admin.end().catch(() => {});
    }
    fs.rmSync(shape.dir, { recursive: true, force: true });
  });

  /** Each job is led by exactly one of the three processes, as their /readyz says. */
  async function leadersOfEachJob(): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const api of shape.api) {
      const { status, body } = await readyz(api!.port);
      assert.equal(status, 200);
      for (const { job, leader } of body!.background_jobs as { job: string; leader: boolean }[]) {
        counts[job] = (counts[job] ?? 0) + (leader ? 1 : 0);
      }
    }
    return counts;
  }

  async function oneLeaderEach(): Promise<void> {
    // A job whose leader stopped is taken by another process at its next try (every second).
    const deadline = Date.now() + 15_000;
    let counts = await leadersOfEachJob();
    while (!(counts.housekeeping === 1 && counts["price feed"] === 1) && Date.now() < deadline) {
      await sleep(200);
      counts = await leadersOfEachJob();
    }
    assert.deepEqual(counts, { housekeeping: 1, "price feed": 1 });
  }

  test("the bundle is ASCII only, so V8 keeps its text at one byte per character", () => {
    const text = fs.readFileSync(path.join(root, "packages/server/dist/server.js"), "latin1");
    const at = text.search(/[\u0080-\u00ff]/);
    assert.equal(
      at,
      -1,
      `a byte above 0x7f in the bundle: ${JSON.stringify(text.slice(Math.max(0, at - 40), at + 10))}`,
    );
    // Comments esbuild keeps hold non-ASCII characters of the sources ("§", "µ"); the build writes
    // them in this form.
    assert.match(text, /\\u\{[0-9a-f]{2,5}\}/);
  });

  test("the client's address reaches the allow-list through nginx (TRUST_PROXY), and only nginx is believed", async () => {
    const target = "/v1/partner/balances/AED?partner_client_id=client-1";
    const through = (localAddress?: string, extra: Record<string, string> = {}) =>
      request(shape.nginxPort, {
        method: "GET",
        path: target,
        headers: { ...signed(partner, "GET", target), ...extra },
        localAddress,
      });
    assert.equal((await through()).status, 200, "from 127.0.0.1, on the allow-list");
    const stranger = await through(strangerAddress);
    assert.equal(stranger.status, 401, "from 127.0.0.3, not on it");
    assert.deepEqual(JSON.parse(stranger.body), { code: 401, msg: "Unauthorized", msg_detail: null });
    assert.equal(
      (await through(strangerAddress, { "x-forwarded-for": "127.0.0.1" })).status,
      401,
      "a client's own X-Forwarded-For is replaced by nginx",
    );
    // Straight to a process from an address that is not nginx's: its X-Forwarded-For is ignored.
    const direct = await request(shape.apiPorts[1]!, {
      method: "GET",
      path: target,
      headers: { ...signed(partner, "GET", target), "x-forwarded-for": strangerAddress },
    });
    assert.equal(direct.status, 200, "judged on the socket's 127.0.0.1");
  });

  test("a rolling restart of the three processes under signed traffic fails no request", async (t) => {
    await oneLeaderEach();
    const failures: string[] = [];
    let deposits = 0;
    let reads = 0;
    let stop = false;
    const worker = async (w: number) => {
      for (let n = 0; !stop; n++) {
        try {
          if (n % 2 === 0) {
            const body = JSON.stringify({
              partner_client_id: "client-1",
              asset_id: "AED",
              amount: "1.25",
              partner_order_ref: `w${w}-${n}`,
            });
            const answer = await request(shape.nginxPort, {
              method: "POST",
              path: "/v1/partner/deposits",
              headers: signed(partner, "POST", "/v1/partner/deposits", body),
              body,
            });
            if (answer.status === 200) deposits++;
            else failures.push(`deposit ${answer.status} ${answer.body}`);
          } else {
            const target = "/v1/partner/asset-pairs";
            const answer = await request(shape.nginxPort, {
              method: "GET",
              path: target,
              headers: signed(partner, "GET", target),
            });
            if (answer.status === 200) reads++;
            else failures.push(`read ${answer.status} ${answer.body}`);
          }
        } catch (err) {
          failures.push(`request failed: ${(err as Error).message}`);
        }
      }
    };
    const traffic = [0, 1, 2, 3, 4, 5].map((w) => worker(w));
    try {
      for (const i of [0, 1, 2]) {
        const before = { deposits, reads };
        writeNginxConfig(shape, new Set([i]));
        await reloadNginx(shape);
        const old = shape.api[i]!;
        assert.equal(await stopChild(old.child, "SIGTERM"), 0, old.output());
        shape.api[i] = startApi(shape, i);
        await waitReady(shape.api[i]!);
        writeNginxConfig(shape, new Set());
        await reloadNginx(shape);
        // Traffic went on meanwhile.
        const deadline = Date.now() + startMs;
        while (deposits + reads < before.deposits + before.reads + 20 && Date.now() < deadline)
          await sleep(20);
      }
    } finally {
      stop = true;
      await Promise.all(traffic);
    }
    t.diagnostic(`${deposits} deposits and ${reads} reads through nginx during the rolling restart`);
    assert.deepEqual(failures, []);
    assert.ok(deposits > 20 && reads > 20, `${deposits} deposits, ${reads} reads`);

    const target = "/v1/partner/balances/AED?partner_client_id=client-1";
    const balance = await request(shape.nginxPort, {
      method: "GET",
      path: target,
      headers: signed(partner, "GET", target),
    });
    assert.equal(balance.status, 200);
    const available = (JSON.parse(balance.body) as { result: { available_balance: string } }).result
      .available_balance;
    // 1.25 per deposit answered 200, at scale 8: none lost, none counted twice.
    assert.equal(
      parseDecimal(available),
      BigInt(deposits) * 125_000_000n,
      `balance ${available} after ${deposits} deposits`,
    );

    await oneLeaderEach();
    const nginxErrors = fs
      .readFileSync(path.join(shape.dir, "nginx-error.log"), "utf8")
      .split("\n")
      .filter((line) => /\[(error|crit|alert|emerg)\]/.test(line));
    assert.deepEqual(nginxErrors, [], "nginx met no failing upstream connection");
  });
});
