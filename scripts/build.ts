// `npm run build`: the packages a partner installs, built into packages/<name>/dist, each folder a
// complete package to pack (`npm pack packages/sdk/dist`): ESM JavaScript and .d.ts declarations
// emitted by tsc from the sources, the package.json partners get, its README and the CHANGELOG.
//
// The workspace does not use these folders: the server, the tests and the operator's CLI keep
// running from the TypeScript sources, which the workspace manifests point at. The published
// manifest is derived here from the workspace one (name, version, description, licence, engines,
// and only the dependencies the built code imports), so the two cannot disagree on a version.
//
// After emitting, every bare import of the built JavaScript is checked against the dependencies
// the published manifest declares: a package that imports something a partner will not have
// installed fails the build, not the partner.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";
import ts from "typescript";

const root = path.resolve(import.meta.dirname, "..");

interface Target {
  /** Folder under packages/. */
  dir: string;
  /** The dependencies of the workspace manifest that the published package keeps. */
  dependencies: readonly string[];
  exports?: Record<string, { types: string; default: string }>;
  bin?: Record<string, string>;
  /** A constant in the sources that must equal the manifest's version. */
  versionConstant?: { file: string; pattern: RegExp };
}

/** In dependency order: each one's declarations are what the next is compiled against. */
const targets: readonly Target[] = [
  {
    dir: "protocol",
    dependencies: [],
    exports: { ".": { types: "./index.d.ts", default: "./index.js" } },
  },
  {
    dir: "sdk",
    dependencies: ["@counterpart/protocol"],
    exports: { ".": { types: "./index.d.ts", default: "./index.js" } },
    versionConstant: { file: "src/config.ts", pattern: /export const sdkVersion = "([^"]+)"/ },
  },
  {
    dir: "cli",
    dependencies: ["@counterpart/protocol", "@counterpart/sdk", "commander"],
    bin: { counterpart: "./partner/main.js" },
    versionConstant: { file: "src/common/version.ts", pattern: /export const cliVersion = "([^"]+)"/ },
  },
];

/** Fields copied as they are from the workspace manifest. */
const copiedFields = ["name", "version", "description", "license", "keywords", "homepage", "repository"];

/** Supported Node lines of the published packages (the service itself needs Node 24). */
const publishedEngines = { node: ">=20" };

type Manifest = Record<string, unknown> & { name: string; version: string };

function readJson(file: string): Manifest {
  return JSON.parse(fs.readFileSync(file, "utf8")) as Manifest;
}

function fail(message: string): never {
  process.stderr.write(`build: ${message}\n`);
  process.exit(1);
}

function filesUnder(dir: string, suffix: string, out: string[] = []): string[] {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) filesUnder(full, suffix, out);
    else if (entry.name.endsWith(suffix)) out.push(full);
  }
  return out;
}

/**
 * tsc rewrites "./x.ts" to "./x.js" in JavaScript but leaves the declarations' specifiers as
 * written. TypeScript 5 maps "./x.ts" to the shipped x.d.ts, but tools that read declarations
 * without that rule (older compilers, declaration bundlers) look for x.ts, which is not shipped:
 * the declarations name "./x.js", like the JavaScript. Relative specifiers only.
 */
function rewriteDeclarationSpecifiers(dist: string): void {
  for (const file of filesUnder(dist, ".d.ts")) {
    const text = fs.readFileSync(file, "utf8");
    const rewritten = text.replace(
      /((?:from|import)\s*\(?\s*["'])(\.{1,2}\/[^"']+)\.ts(["'])/g,
      (_m, head: string, spec: string, tail: string) => `${head}${spec}.js${tail}`,
    );
    if (rewritten !== text) fs.writeFileSync(file, rewritten);
  }
}

/** The package names the built JavaScript imports (static, dynamic and re-exports). */
function bareImports(dist: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of filesUnder(dist, ".js")) {
    for (const imported of ts.preProcessFile(fs.readFileSync(file, "utf8"), true, true).importedFiles) {
      const spec = imported.fileName;
      if (spec.startsWith(".") || spec.startsWith("node:")) continue;
      const name = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!;
      if (!found.has(name)) found.set(name, path.relative(root, file));
    }
  }
  return found;
}

const versions = new Set(
  targets.map((t) => readJson(path.join(root, "packages", t.dir, "package.json")).version),
);
if (versions.size !== 1) fail(`the packages must share one version, found ${[...versions].join(", ")}`);
const version = [...versions][0]!;

for (const target of targets) {
  const pkgDir = path.join(root, "packages", target.dir);
  const dist = path.join(pkgDir, "dist");
  const source = readJson(path.join(pkgDir, "package.json"));
  fs.rmSync(dist, { recursive: true, force: true });

  if (target.versionConstant !== undefined) {
    const text = fs.readFileSync(path.join(pkgDir, target.versionConstant.file), "utf8");
    const constant = target.versionConstant.pattern.exec(text)?.[1];
    if (constant !== version) {
      fail(`${target.dir}/${target.versionConstant.file} says ${constant}, the manifest ${version}`);
    }
  }

  const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc");
  try {
    execFileSync(process.execPath, [tsc, "-p", path.join(pkgDir, "tsconfig.build.json")], {
      cwd: pkgDir,
      stdio: "inherit",
    });
  } catch {
    fail(`tsc failed for packages/${target.dir}`);
  }
  rewriteDeclarationSpecifiers(dist);

  const sourceDependencies = (source.dependencies ?? {}) as Record<string, string>;
  const dependencies: Record<string, string> = {};
  for (const name of target.dependencies) {
    const range = sourceDependencies[name];
    if (range === undefined) fail(`packages/${target.dir} does not declare ${name}`);
    dependencies[name] = name.startsWith("@counterpart/") ? version : range;
  }
  for (const [name, file] of bareImports(dist)) {
    if (builtinModules.includes(name)) fail(`${file} imports "${name}"; write "node:${name}"`);
    if (!(name in dependencies))
      fail(`${file} imports ${name}, which the published package does not declare`);
  }

  const manifest: Record<string, unknown> = {};
  for (const field of copiedFields) if (source[field] !== undefined) manifest[field] = source[field];
  Object.assign(manifest, {
    type: "module",
    ...(target.exports === undefined ? {} : { exports: target.exports, types: target.exports["."]?.types }),
    ...(target.bin === undefined ? {} : { bin: target.bin }),
    files: [...(target.exports === undefined ? ["**/*.js"] : ["**/*.js", "**/*.d.ts"]), "CHANGELOG.md"],
    engines: publishedEngines,
    sideEffects: target.bin !== undefined,
    ...(Object.keys(dependencies).length === 0 ? {} : { dependencies }),
  });
  fs.writeFileSync(path.join(dist, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  // The package's own README; the one CHANGELOG of the partner packages, at the root.
  for (const from of [path.join(pkgDir, "README.md"), path.join(root, "CHANGELOG.md")]) {
    if (!fs.existsSync(from)) fail(`${path.relative(root, from)} is missing`);
    fs.copyFileSync(from, path.join(dist, path.basename(from)));
  }
  process.stdout.write(`built ${manifest.name}@${version} into packages/${target.dir}/dist\n`);
}
