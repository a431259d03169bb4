// `npm run build:server` (also the last step of `npm run build`): the API process as one JavaScript
// file, packages/server/dist/server.js, with the migrations beside it in dist/migrations and the
// console's files (read at start, from beside the module that serves them) in dist/assets. This is
// what production runs (`node packages/server/dist/server.js`, docs/operations.md "Deploying").
//
// Why a bundle: started from the TypeScript sources, a process spent about a second of CPU before
// it could answer only in finding, reading and type-stripping some 1,500 modules; one bundled file
// is read and compiled once (bench/scenarios/startup.ts measures both). The sources stay what the
// workspace, the tests and the operator's CLI run.
//
// The packages left out of the bundle are resolved from node_modules at run time, as usual: PGlite
// and its Kysely dialect (loaded only for the sandbox, with files of their own: WebAssembly, data),
// Swagger UI (it serves the files of its package), pg-native (an optional add-on of pg) and
// sodium-native (a prebuilt add-on, loaded by platform/signature-verifier.ts when it can be). The
// files are written under a temporary name and renamed, so a process that starts meanwhile reads
// either the old bundle or the new one.

import fs from "node:fs";
import path from "node:path";
import { type BuildOptions, build } from "esbuild";

const root = path.resolve(import.meta.dirname, "..");
const serverDir = path.join(root, "packages/server");
const dist = path.join(serverDir, "dist");

/** Packages resolved at run time rather than bundled (see the head of this file). */
const serverExternals = [
  "@electric-sql/pglite",
  "kysely-pglite-dialect",
  "@fastify/swagger-ui",
  "pg-native",
  "sodium-native",
] as const;

function writeAtomically(file: string, contents: string | Uint8Array): void {
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, contents);
  fs.renameSync(temporary, file);
}

const options = {
  entryPoints: [path.join(serverDir, "src/server-main.ts")],
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node24",
  outfile: path.join(dist, "server.js"),
  write: false,
  external: [...serverExternals],
  // Bundled CommonJS packages call require(); an ES module has none of its own.
  banner: {
    js: 'import { createRequire as __createRequire } from "node:module";\nconst require = __createRequire(import.meta.url);',
  },
  // Stack traces and logged errors keep the functions' own names.
  keepNames: true,
  legalComments: "none",
  logLevel: "warning",
} satisfies BuildOptions;

const result = await build(options);

// The bundle as ASCII only. V8 keeps a module's whole source text for as long as the process runs
// (to compile functions lazily, and for Function.prototype.toString), one byte per character when
// the text is all Latin-1 and two otherwise: a single "µ" or "§" left in a comment doubled the
// 5.9 MB bundle to 11.3 MiB of every process's memory. esbuild escapes every non-ASCII character in
// code (its default charset), but comments it keeps are left as written; their characters are
// written here as \u escapes. That they are all in comments is checked, not assumed: the same build
// without whitespace and comments must have none at all.
function escapeNonAscii(text: string): string {
  return text.replace(/[\u0080-\u{10ffff}]/gu, (ch) => `\\u{${(ch.codePointAt(0) ?? 0).toString(16)}}`);
}

const [output] = result.outputFiles;
if (output === undefined || result.outputFiles.length !== 1)
  throw new Error(`esbuild wrote ${result.outputFiles.length} files, expected one`);
const nonAscii = /[\u0080-\u{10ffff}]/u;
if (nonAscii.test(output.text)) {
  const stripped = await build({ ...options, minifyWhitespace: true });
  const code = stripped.outputFiles[0]?.text ?? "";
  const at = code.search(nonAscii);
  if (at !== -1)
    throw new Error(
      `the bundle's code (not only its comments) holds a non-ASCII character: ${JSON.stringify(code.slice(Math.max(0, at - 60), at + 20))}`,
    );
}

fs.mkdirSync(path.join(dist, "migrations"), { recursive: true });
writeAtomically(output.path, escapeNonAscii(output.text));
const migrations = path.join(serverDir, "src/db/migrations");
const shipped = fs.readdirSync(migrations).filter((n) => n.endsWith(".sql"));
for (const name of shipped) {
  writeAtomically(path.join(dist, "migrations", name), fs.readFileSync(path.join(migrations, name)));
}
// A migration the tree no longer has (another branch's, one renamed) would otherwise stay beside
// the bundle and be applied by it.
for (const name of fs.readdirSync(path.join(dist, "migrations"))) {
  if (!shipped.includes(name)) fs.rmSync(path.join(dist, "migrations", name), { force: true });
}
// The console reads its stylesheet and script from "assets" beside its module; in the bundle that
// module is server.js.
const consoleAssets = path.join(serverDir, "src/modules/console/assets");
fs.mkdirSync(path.join(dist, "assets"), { recursive: true });
for (const name of fs.readdirSync(consoleAssets)) {
  writeAtomically(path.join(dist, "assets", name), fs.readFileSync(path.join(consoleAssets, name)));
}
process.stdout.write(`built the API process into ${path.relative(root, path.join(dist, "server.js"))}\n`);
