// Tidy: bans footguns that review keeps missing. Fails with file:line for each finding.
//  - modules/ never reads the clock or randomness directly (they are injected);
//  - no focused or skipped tests;
//  - no parseFloat/Number() on money-looking names in server and protocol code;
//  - no console.log in library code (the CLI and scripts print on purpose);
//  - nothing reads ../shared (a user's clone has no such folder).

import fs from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");

interface Rule {
  name: string;
  pattern: RegExp;
  applies: (file: string) => boolean;
}

const isTest = (f: string) => f.endsWith(".test.ts");
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
];

function files(dir: string, out: string[] = []): string[] {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "node_modules" || entry.name.startsWith(".")) continue;
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
]) {
  const rel = path.relative(root, file);
  const lines = fs.readFileSync(file, "utf8").split("\n");
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
