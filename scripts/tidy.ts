// Tidy: bans footguns that review keeps missing. Fails with file:line for each finding.
//  - modules/ never reads the clock or randomness directly (they are injected);
//  - no focused or skipped tests;
//  - no parseFloat/Number() on money-looking names in server and protocol code;
//  - no console.log in library code (the CLI and scripts print on purpose);
//  - nothing reads ../shared (a user's clone has no such folder);
//  - no comment cites a document outside the repository (cite docs/reference.md §… instead).
//  - the server's layers: each module is routes -> service -> store, with pure domain files beside
//    them, and modules meet only through their index.ts (the "layering" rules below).

import fs from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");

interface Rule {
  name: string;
  pattern: RegExp;
  applies: (file: string) => boolean;
}

const isTest = (f: string) => f.endsWith(".test.ts");
/**
 * A comment that cites a document a user's clone does not hold: the contract's text by section
 * ("spec §4.2"), the design page, or the contract's file. docs/reference.md states the interface
 * and docs/decisions.md the decisions; cite those. Migrations are never scanned (only .ts files
 * are, and applied migrations keep their text).
 */
const outsideCitation =
  /(?:^\s*(?:\/\/|\/\*|\*)|\s\/\/\s).*(?:\b[Ss]pec §|DESIGN\.md|\bDESIGN "|partner-interface)/;

const rules: Rule[] = [
  {
    name: "direct clock or randomness in a module (inject Clock/Random)",
    pattern: /\bDate\.now\(|\bnew Date\(\)|\bMath\.random\(|\brandomUUID\(/,
    applies: (f) => f.includes("/server/src/modules/") && !isTest(f),
  },
  {
    name: "focused or skipped test",
    pattern: /\b(test|it|describe)\.(only|skip)\(|\{ *only: *true/,
    applies: isTest,
  },
  {
    name: "money through a JS number",
    pattern: /\b(parseFloat|Number)\((amount|balance|price|fee|vat|quote_amount|base_amount)\b/,
    applies: (f) => (f.includes("/server/src/") || f.includes("/protocol/src/")) && !isTest(f),
  },
  {
    name: "console.log in library code",
    pattern: /\bconsole\.log\(/,
    applies: (f) => (f.includes("/server/src/") || f.includes("/protocol/src/")) && !isTest(f),
  },
  {
    name: "reads the steering folder ../shared",
    pattern: /\.\.\/shared\b/,
    applies: (f) => !f.endsWith("tidy.ts"),
  },
  {
    name: "cites a document outside the repository (cite docs/reference.md § or docs/decisions.md)",
    pattern: outsideCitation,
    applies: (f) => !f.endsWith("scripts/tidy.ts") && !f.includes("/db/migrations/"),
  },
];

/**
 * The server's boundaries, checked on its imports (and, for the few that are not imports, on the
 * text). Each applies to the server's own code, not to tests and test helpers (testing/, faults/),
 * which set up and inspect state directly.
 */
interface LayerRule {
  name: string;
  /** The file (relative to packages/server/src, with a leading slash) the rule applies to. */
  applies: (file: string) => boolean;
  /** An import of `target` (resolved, relative to packages/server/src, or a package name) that breaks the rule. */
  badImport?: (file: string, target: string, names: ImportNames) => boolean;
  /** A line that breaks the rule. */
  badLine?: RegExp;
}

interface ImportNames {
  /** `import type { ... }` or `export type { ... }`: nothing of it exists at run time. */
  typeOnly: boolean;
  /** The names imported as values. */
  values: string[];
}

const serverSrc = "packages/server/src";
const moduleOf = (f: string) => /^\/modules\/([^/]+)\//.exec(f)?.[1];
const isStore = (f: string) => f.endsWith("-store.ts");
const isRoutes = (f: string) => f.endsWith("-routes.ts");
const isViews = (f: string) => f.endsWith("-views.ts");
const inDb = (f: string) => f.startsWith("/db/");
const serverCode = (f: string) => !isTest(f) && !f.startsWith("/testing/") && !f.startsWith("/faults/");
const layerRules: LayerRule[] = [
  {
    name: "imports another module past its index.ts (modules meet only through index.ts)",
    applies: serverCode,
    badImport: (f, t) => {
      const m = moduleOf(t);
      return m !== undefined && m !== moduleOf(f) && !t.endsWith(`/modules/${m}/index.ts`);
    },
  },
  {
    name: "kysely's sql, db/numeric or db/now outside a store (only *-store.ts and db/ speak SQL and NUMERIC text)",
    applies: (f) => serverCode(f) && !inDb(f) && !isStore(f),
    badImport: (f, t, n) =>
      (t === "kysely" && n.values.includes("sql")) ||
      t === "/db/now.ts" ||
      // Views turn stored rows into wire shape and read their NUMERIC text (the views' own rule).
      (t === "/db/numeric.ts" && !isViews(f)),
  },
  {
    name: "a query outside a store (services reach the database through their module's *-store.ts)",
    applies: (f) => serverCode(f) && f.startsWith("/modules/") && !isStore(f),
    badLine: /\.(selectFrom|insertInto|updateTable|deleteFrom)\(|\.transaction\(\)/,
  },
  {
    name: "fastify outside a routes file (only *-routes.ts, http/, app.ts and main.ts know HTTP)",
    applies: (f) =>
      serverCode(f) && !isRoutes(f) && !f.startsWith("/http/") && f !== "/app.ts" && f !== "/main.ts",
    badImport: (_f, t) => t === "fastify" || t.startsWith("fastify/") || t.startsWith("@fastify/"),
  },
  {
    name: "a route reaches past its service (a store, the database handle or the Services composition)",
    applies: (f) => serverCode(f) && isRoutes(f),
    badImport: (_f, t, n) =>
      isStore(t) || t === "/services.ts" || (inDb(t) && !(t === "/db/schema.ts" && n.typeOnly)),
  },
  {
    name: "a module file other than a route imports http/ (HTTP stays in routes)",
    applies: (f) => serverCode(f) && f.startsWith("/modules/") && !isRoutes(f),
    badImport: (_f, t) => t.startsWith("/http/"),
  },
  {
    name: "a PostgreSQL error code outside db/ (db/errors.ts turns them into database errors)",
    applies: (f) => serverCode(f) && !inDb(f),
    badLine:
      /\bpg(ErrorCode|Constraint)\(|\.code\b.*["'](0[0-9A-Z]|[1-9][0-9A-Z]|CP)[0-9A-Z]{3}["']|["']CP[0-9]{3}["']|["'](23505|40001|40P01|57P0[1-3]|53300)["']/,
  },
  {
    name: "a UUID pattern written again (platform/uuid.ts has the one)",
    applies: (f) => serverCode(f) && f !== "/platform/uuid.ts",
    badLine: /\{8\}-\[0-9a-f/i,
  },
  {
    name: "a page size written by hand (limits.pageSizeDefault)",
    applies: serverCode,
    badLine: /page_?[sS]ize\s*\?\?\s*\d/,
  },
];

const importPattern = /\b(import|export)\s+(type\s+)?(?:([\w*{}\s,]*?)\s+from\s+)?["']([^"']+)["']/g;

/** Findings of the layer rules in one server file: [line, rule]. */
function layerFindings(file: string, text: string): [number, string][] {
  const rel = `/${path.relative(path.join(root, serverSrc), file).split(path.sep).join("/")}`;
  const out: [number, string][] = [];
  const lineAt = (index: number) => text.slice(0, index).split("\n").length;
  for (const rule of layerRules) {
    if (!rule.applies(rel)) continue;
    if (rule.badImport) {
      for (const m of text.matchAll(importPattern)) {
        const spec = m[4]!;
        const target = spec.startsWith(".")
          ? `/${path
              .relative(path.join(root, serverSrc), path.resolve(path.dirname(file), spec))
              .split(path.sep)
              .join("/")}`
          : spec;
        const clause = m[3] ?? "";
        const values = m[2]
          ? []
          : [...clause.replace(/[{}]/g, " ").split(/[\s,]+/)].filter(
              (w, i, all) => w !== "" && w !== "type" && all[i - 1] !== "type" && w !== "as",
            );
        if (rule.badImport(rel, target, { typeOnly: m[2] !== undefined, values })) {
          out.push([lineAt(m.index + m[0].length), rule.name]);
        }
      }
    }
    if (rule.badLine) {
      text.split("\n").forEach((line, i) => {
        if (rule.badLine!.test(line)) out.push([i + 1, rule.name]);
      });
    }
  }
  return out;
}

function files(dir: string, out: string[] = []): string[] {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "node_modules" || entry.name === "dist" || entry.name.startsWith(".")) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) files(full, out);
    else if (entry.name.endsWith(".ts")) out.push(full);
  }
  return out;
}

let findings = 0;
for (const file of [
  ...files(path.join(root, "packages")),
  ...files(path.join(root, "scripts")),
  ...files(path.join(root, "bench")),
  ...files(path.join(root, "test")),
]) {
  const rel = path.relative(root, file);
  const text = fs.readFileSync(file, "utf8");
  const lines = text.split("\n");
  if (rel.startsWith(`${serverSrc}/`.split("/").join(path.sep))) {
    for (const [line, name] of layerFindings(file, text)) {
      findings++;
      process.stderr.write(`${rel}:${line}: layering: ${name}\n`);
    }
  }
  for (const rule of rules) {
    if (!rule.applies(`/${rel}`)) continue;
    lines.forEach((line, i) => {
      if (rule.pattern.test(line)) {
        findings++;
        process.stderr.write(`${rel}:${i + 1}: ${rule.name}\n`);
      }
    });
  }
}
if (findings > 0) {
  process.stderr.write(`tidy: ${findings} finding(s)\n`);
  process.exitCode = 1;
} else {
  process.stdout.write("tidy: clean\n");
}
