// Proof as a partner: the packages are built (`npm run build`), packed with `npm pack`, and the
// tarballs installed with `npm install` into an empty project under the system's temporary folder,
// outside the workspace (no links, no workspace resolution). Then, on every maintained Node line (the
// system Node, 20 on CI, Node 22 fetched from the registry, and the repository's Node 24), against a fresh sandbox each (the real
// service, PGlite, port 0, its demo partner):
//  - partner-flow.mjs, plain JavaScript: client, document, deposit, quote, execute, listAll,
//    a reused partner_order_ref recovered, request ids on results and errors;
//  - the SDK README's "Integrate in 10 minutes" guide, extracted, type-checked with tsc against the
//    installed declarations, compiled, and run;
//  - require.cjs: a CommonJS project;
//  - the partner CLI from its tarball, through `npx counterpart ...` in that project.
// It prints the packed sizes, the SDK's cold import time and the matrix that ran.
//
// Run: npm run test:packaging (CI runs it; it needs the npm registry for commander and Node 22). It is not
// named *.test.ts, so `npm test` and `npm run test:pg` leave it out: it builds, packs, installs and
// starts a sandbox per Node line, minutes of work that does not depend on the database.
// PACKAGING_NODES (paths separated by the platform's delimiter) replaces the Node binaries found.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import {
  type ServiceProcess,
  startService,
  tempDataDir,
} from "../../packages/server/src/testing/processes.ts";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");
const packages = ["protocol", "sdk", "cli"] as const;
const commandTimeoutMs = 120_000;
/** Generous: CI machines are shared, and a start under load takes more than the usual 30 s. */
const serviceStartMs = 120_000;

interface Packed {
  name: string;
  filename: string;
  size: number;
  unpackedSize: number;
  entryCount: number;
}

interface NodeBinary {
  bin: string;
  version: string;
  major: number;
}

/**
 * Node 22, the maintained line between the system's 20 and the repository's 24, fetched from the
 * npm registry's per-platform build at an exact version (npm checks its integrity) into `dir`.
 */
const node22Version = "22.23.3";
async function fetchNode22(dir: string): Promise<string> {
  const name = `node-${process.platform}-${process.arch}`;
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "package.json"), '{ "private": true }\n');
  await run("npm", ["install", "--no-audit", "--no-fund", `${name}@${node22Version}`], {
    cwd: dir,
    timeout: commandTimeoutMs,
  });
  return path.join(dir, "node_modules", name, "bin", "node");
}

/**
 * The Node binaries to test: PACKAGING_NODES, else this one (24), the first on PATH outside
 * node_modules (the system's, 20 on CI) and Node 22 fetched into `dir`.
 */
async function nodeBinaries(dir: string): Promise<NodeBinary[]> {
  const candidates = process.env.PACKAGING_NODES
    ? process.env.PACKAGING_NODES.split(path.delimiter).filter((p) => p !== "")
    : [
        process.execPath,
        ...(process.env.PATH ?? "")
          .split(path.delimiter)
          .filter((dir) => dir !== "" && !dir.split(path.sep).includes("node_modules"))
          .map((dir) => path.join(dir, "node"))
          .filter((bin) => fs.existsSync(bin))
          .slice(0, 1),
        await fetchNode22(dir),
      ];
  const found = new Map<string, NodeBinary>();
  for (const bin of candidates) {
    const { stdout } = await run(bin, ["--version"], { timeout: 10_000 });
    const version = stdout.trim();
    if (!found.has(version))
      found.set(version, { bin, version, major: Number(/^v(\d+)/.exec(version)?.[1]) });
  }
  return [...found.values()].sort((a, b) => a.major - b.major);
}

/** The `ts` blocks between the guide markers of the SDK README, as one module. */
function guideSource(): string {
  const readme = fs.readFileSync(path.join(root, "packages/sdk/README.md"), "utf8");
  const start = readme.indexOf("<!-- guide:start -->");
  const end = readme.indexOf("<!-- guide:end -->");
  assert.ok(start !== -1 && end > start, "the SDK README has the guide markers");
  const blocks = [...readme.slice(start, end).matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  assert.ok(blocks.length >= 6, "the guide has its code blocks");
  return `${blocks.join("\n")}\nexport {};\n`;
}

// A whole 1x1 PNG (signature, IHDR, IDAT, IEND), as a partner's scan would be.
const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  "base64",
);

describe("the packages as a partner installs them", () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "cp-packaging-"));
  const tarballs = path.join(work, "tarballs");
  const project = path.join(work, "partner-app");
  const packed: Packed[] = [];
  let nodes: NodeBinary[] = [];
  const matrix: string[] = [];
  const importTimes: string[] = [];

  before(async () => {
    nodes = await nodeBinaries(path.join(work, "node-22"));
    await run(process.execPath, [path.join(root, "scripts/build.ts")], {
      cwd: root,
      timeout: commandTimeoutMs,
    });
    fs.mkdirSync(tarballs);
    for (const name of packages) {
      const { stdout } = await run(
        "npm",
        ["pack", "--json", "--pack-destination", tarballs, path.join(root, "packages", name, "dist")],
        { cwd: work, timeout: commandTimeoutMs },
      );
      const [info] = JSON.parse(stdout) as Packed[];
      packed.push(info!);
    }
    fs.mkdirSync(project);
    fs.writeFileSync(
      path.join(project, "package.json"),
      `${JSON.stringify({ name: "partner-app", private: true, type: "module" }, null, 2)}\n`,
    );
    await run(
      "npm",
      ["install", "--no-audit", "--no-fund", ...packed.map((p) => path.join(tarballs, p.filename))],
      { cwd: project, timeout: commandTimeoutMs },
    );
    fs.copyFileSync(
      path.join(import.meta.dirname, "partner-flow.mjs"),
      path.join(project, "partner-flow.mjs"),
    );
    fs.copyFileSync(path.join(import.meta.dirname, "require.cjs"), path.join(project, "require.cjs"));
    fs.writeFileSync(path.join(project, "passport.png"), png);
  });

  after(() => {
    const lines = [
      "packed (npm pack):",
      ...packed.map(
        (p) => `  ${p.name}: ${p.size} bytes packed, ${p.unpackedSize} unpacked, ${p.entryCount} files`,
      ),
      "cold import of @counterpart/sdk (median of 5 fresh processes):",
      ...importTimes.map((l) => `  ${l}`),
      "matrix:",
      ...matrix.map((l) => `  ${l}`),
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
    fs.rmSync(work, { recursive: true, force: true });
  });

  test("the packages install from their tarballs alone, as built JavaScript with declarations", () => {
    for (const major of [20, 22, 24])
      assert.ok(
        nodes.some((n) => n.major === major),
        `no Node ${major} found (${nodes.map((n) => n.version).join(", ")}); set PACKAGING_NODES`,
      );
    for (const name of packages) {
      const dir = path.join(project, "node_modules", "@counterpart", name);
      assert.equal(fs.lstatSync(dir).isSymbolicLink(), false, `${name} is a copy, not a link`);
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as Record<
        string,
        unknown
      >;
      assert.deepEqual(manifest.engines, { node: ">=20" });
      assert.equal(manifest.private, undefined);
      assert.equal(manifest.scripts, undefined);
      const files = fs.readdirSync(dir, { recursive: true }).map(String);
      assert.deepEqual(
        files.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts")),
        [],
        `${name} ships no TypeScript sources`,
      );
      assert.ok(files.includes("README.md") && files.includes("CHANGELOG.md"));
    }
    const sdk = JSON.parse(
      fs.readFileSync(path.join(project, "node_modules/@counterpart/sdk/package.json"), "utf8"),
    ) as { dependencies: Record<string, string>; exports: unknown };
    assert.deepEqual(Object.keys(sdk.dependencies), ["@counterpart/protocol"]);
    assert.deepEqual(sdk.exports, { ".": { types: "./index.d.ts", default: "./index.js" } });
    // Nothing but the three packages and the CLI's commander came into the project.
    assert.deepEqual(
      fs
        .readdirSync(path.join(project, "node_modules"))
        .filter((d) => !d.startsWith("."))
        .sort(),
      ["@counterpart", "commander"],
    );
  });

  test("the guide in the SDK README type-checks against the installed declarations", async () => {
    fs.writeFileSync(path.join(project, "guide.ts"), guideSource());
    fs.writeFileSync(
      path.join(project, "tsconfig.json"),
      `${JSON.stringify(
        {
          compilerOptions: {
            target: "es2022",
            lib: ["es2023"],
            module: "nodenext",
            moduleResolution: "nodenext",
            strict: true,
            outDir: "out",
            // Node's own types only; @counterpart/* resolve from this project's node_modules.
            typeRoots: [path.join(root, "node_modules/@types")],
            types: ["node"],
          },
          files: ["guide.ts"],
        },
        null,
        2,
      )}\n`,
    );
    const tsc = path.join(root, "node_modules/typescript/bin/tsc");
    const { stdout } = await run(process.execPath, [tsc, "-p", project, "--listFiles"], {
      cwd: project,
      timeout: commandTimeoutMs,
    });
    const sdkFiles = stdout.split("\n").filter((f) => f.includes("@counterpart/"));
    assert.ok(sdkFiles.length > 0);
    const realProject = fs.realpathSync(project);
    for (const f of sdkFiles) {
      assert.ok(f.startsWith(realProject) || f.startsWith(project), `${f} is the installed package`);
      assert.ok(f.endsWith(".d.ts"), `${f} is a declaration`);
    }
    assert.ok(fs.existsSync(path.join(project, "out/guide.js")));
  });

  describe("on each Node line, against a sandbox of its own", () => {
    let runNumber = 0;
    const env = (svc: ServiceProcess, keyFile: string, partnerId: string) => ({
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      COUNTERPART_URL: svc.partnerUrl,
      COUNTERPART_PARTNER_ID: partnerId,
      COUNTERPART_KEY_FILE: keyFile,
    });

    test("SDK (JavaScript, the TypeScript guide, CommonJS) and CLI, from the tarballs", async (t) => {
      for (const node of nodes) {
        await t.test(`Node ${node.version}`, async () => {
          const dataDir = tempDataDir();
          let svc: ServiceProcess | undefined;
          try {
            svc = await startService({ DATA_DIR: dataDir }, serviceStartMs);
            const demo = path.join(dataDir, "demo-partner");
            const partnerId = (
              JSON.parse(fs.readFileSync(path.join(demo, "partner.json"), "utf8")) as { partner_id: string }
            ).partner_id;
            const base = env(svc, path.join(demo, "private-key.pem"), partnerId);
            // The binary's folder first: `npx` and the CLI's `#!/usr/bin/env node` run on this Node.
            const nodeEnv = { ...base, PATH: `${path.dirname(node.bin)}${path.delimiter}${base.PATH}` };
            const inProject = { cwd: project, env: nodeEnv, timeout: commandTimeoutMs };

            runNumber += 1;
            const flow = await run(node.bin, ["partner-flow.mjs"], {
              ...inProject,
              env: { ...nodeEnv, RUN_NUMBER: String(runNumber) },
            });
            const flowResult = JSON.parse(flow.stdout) as { ok: boolean; node: string; orders: number };
            assert.deepEqual(
              { ok: flowResult.ok, node: flowResult.node, orders: flowResult.orders },
              { ok: true, node: node.version, orders: 2 },
            );
            matrix.push(`${node.version}: partner-flow.mjs (plain JavaScript) passed`);

            const guide = await run(node.bin, ["out/guide.js"], inProject);
            assert.match(guide.stdout, /^client user-8812 is verified \(request \S+\)$/m);
            assert.match(guide.stdout, /^document \d+ stored$/m);
            assert.match(guide.stdout, /^deposit \d+: completed$/m);
            assert.match(guide.stdout, /^bought \S+ BTC for \S+ AED: completed$/m);
            assert.equal([...guide.stdout.matchAll(/^order \S+ (buy|deposit) completed$/gm)].length, 2);
            assert.match(guide.stdout, /^replayed: true, same order: true$/m);
            assert.match(guide.stdout, /^reference taken by order \d+$/m);
            assert.match(guide.stdout, /^not found \(HTTP 404, request \S+\)$/m);
            matrix.push(`${node.version}: the README guide (TypeScript, tsc-checked, compiled) passed`);

            const cjs = await run(node.bin, ["require.cjs"], inProject);
            assert.equal((JSON.parse(cjs.stdout) as { ok: boolean }).ok, true);
            matrix.push(`${node.version}: require("@counterpart/sdk") from CommonJS passed`);

            await cliFlow(inProject, runNumber);
            matrix.push(`${node.version}: npx counterpart (partner CLI) passed`);

            const times: number[] = [];
            for (let i = 0; i < 5; i++) {
              const { stdout } = await run(
                node.bin,
                [
                  "--input-type=module",
                  "-e",
                  'const t = performance.now(); await import("@counterpart/sdk"); process.stdout.write(String(performance.now() - t));',
                ],
                inProject,
              );
              times.push(Number(stdout));
            }
            times.sort((a, b) => a - b);
            importTimes.push(`${node.version}: ${times[2]!.toFixed(1)} ms (min ${times[0]!.toFixed(1)})`);
          } finally {
            if (svc !== undefined && svc.child.exitCode === null) await svc.stop();
            fs.rmSync(dataDir, { recursive: true, force: true });
          }
        });
      }
    });
  });
});

type RunOptions = { cwd: string; env: Record<string, string>; timeout: number };

/** The partner CLI from its tarball: `npx --no counterpart ...` (never fetched from the registry). */
async function cliFlow(options: RunOptions, n: number): Promise<void> {
  const cli = async (...args: string[]) => {
    const { stdout } = await run("npx", ["--no", "--", "counterpart", ...args], options);
    return stdout;
  };
  const json = async (...args: string[]) =>
    JSON.parse(await cli(...args, "--json")) as Record<string, unknown>;
  const pcid = `pkg-cli-${n}`;
  const digits = String(n).padStart(7, "0");

  assert.equal((await cli("--version")).trim(), "0.2.0");
  const keys = path.join(options.cwd, `keys-${n}`);
  const generated = await json("keygen", "--out", keys);
  assert.match(String(generated.public_key_pem), /^-----BEGIN PUBLIC KEY-----/);
  fs.rmSync(keys, { recursive: true, force: true });

  const client = await json(
    "client",
    "create",
    "--data",
    JSON.stringify({
      partner_client_id: pcid,
      name: `Packaging Cli ${n}`,
      birth_date: "1990-05-17",
      email: `pkg.cli.${n}@example.com`,
      phone: `+97156${digits}`,
      residency_id: "ae",
      citizenship_id: "ae",
      place_of_birth_id: "ae",
      government_id_number: `784-1992-${digits}-1`,
      government_id_doe: "2030-01-31",
      address: { street: "1 Sheikh Zayed Rd", city: "Dubai", postal_code: "00000", unit: "Apt 12" },
      employment: {
        status: "employed",
        company: "Acme",
        job_industry: "banking_financial_services",
        job_level: "senior",
        job_title: "Analyst",
      },
      trading_volume: "1000_10000",
      account_purpose: ["long_term_investment"],
    }),
  );
  assert.equal(client.status, "verified");
  const doc = await json(
    "document",
    "upload",
    "--client",
    pcid,
    "--type",
    "government_id",
    "--front",
    "passport.png",
  );
  assert.equal(doc.type, "government_id");

  const depositArgs = [
    "deposit",
    "--client",
    pcid,
    "--asset",
    "AED",
    "--amount",
    "500",
    "--ref",
    `pkg-cli-dep-${n}`,
  ];
  const deposit = (await json(...depositArgs)) as {
    order: { id: number; status: string };
    replayed: boolean;
  };
  assert.equal(deposit.order.status, "completed");
  assert.equal(deposit.replayed, false);
  const replayed = (await json(...depositArgs)) as { order: { id: number }; replayed: boolean };
  assert.deepEqual([replayed.replayed, replayed.order.id], [true, deposit.order.id]);

  const quote = await json(
    "quote",
    "--client",
    pcid,
    "--pair",
    "BTC-AED",
    "--side",
    "buy",
    "--amount",
    "0.001",
  );
  const executed = (await json(
    "execute",
    "--client",
    pcid,
    "--token",
    String(quote.token),
    "--ref",
    `pkg-cli-buy-${n}`,
  )) as { order: { type: string; status: string } };
  assert.deepEqual([executed.order.type, executed.order.status], ["buy", "completed"]);

  const all = (await json("order", "list", "--client", pcid, "--all", "--page-size", "1")) as {
    items: { type: string }[];
  };
  assert.deepEqual(
    all.items.map((o) => o.type),
    ["buy", "deposit"],
  );

  // The operator's commands are not in the partner's package.
  await assert.rejects(
    run("npx", ["--no", "--", "counterpart", "serve"], options),
    (err: { code?: number; stderr?: string }) => {
      assert.equal(err.code, 2);
      assert.match(String(err.stderr), /unknown command 'serve'/);
      return true;
    },
  );
}
