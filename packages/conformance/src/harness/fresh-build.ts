import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/**
 * A built file is older than the source it was built from: a process loading
 * it would run code that no longer matches the source.
 */
export class StaleBuild extends Error {
  /** The built file, e.g. `…/dist/index.js`. */
  readonly built: string;
  /** Its source, e.g. `…/src/index.ts`. */
  readonly source: string;

  constructor(built: string, source: string, rebuild: string) {
    super(`Stale build: ${shown(built)} is older than its source ${shown(source)}; ${rebuild} first.`);
    this.name = "StaleBuild";
    this.built = built;
    this.source = source;
  }
}

/**
 * Throws `StaleBuild` when code these modules load is built from a source that
 * changed since: it follows their imports (not `import type`), and checks every
 * package reached at its built files (a relative import of its `dist/`, or its
 * name) with the packages it depends on. A package is checked when it has
 * `src/` and `dist/` and is not installed (not under `node_modules`): installed
 * code cannot go stale, and its timestamps mean nothing.
 */
export function assertFreshBuild(...modules: ReadonlyArray<string | URL>): void {
  const walk = new BuildWalk();
  for (const module of modules) {
    const path = localPath(module);
    if (path !== undefined) walk.module(path);
  }
}

/**
 * Throws `StaleBuild` when a package that `packageDir` depends on (any kind of
 * dependency, and theirs in turn) is built from a source that changed since.
 * The package itself is not checked: its tests load its source.
 */
export function assertFreshDependencies(packageDir: string): void {
  const walk = new BuildWalk();
  for (const name of dependencyNames(packageDir, ALL_DEPENDENCIES)) {
    const dir = packageDirOf(name, packageDir);
    if (dir !== undefined) walk.package(dir);
  }
}

const RUNTIME_DEPENDENCIES = ["dependencies", "peerDependencies", "optionalDependencies"] as const;
const ALL_DEPENDENCIES = [...RUNTIME_DEPENDENCIES, "devDependencies"] as const;

/** Source extensions and what the compiler turns each into. */
const BUILT_EXTENSION: Readonly<Record<string, string>> = {
  ".ts": ".js",
  ".mts": ".mjs",
  ".cts": ".cjs",
  ".tsx": ".js",
};
const SOURCE = /(\.[cm]?ts|\.tsx)$/;
const DECLARATION = /\.d\.[cm]?ts$/;
const SCRIPT = /\.[cm]?[jt]sx?$/;
/** `import … from "x"`, `export … from "x"`, `import "x"`; group 1 is set for `import type`/`export type`. */
const STATIC_IMPORT = /\b(?:import|export)\s+(type\s+)?(?:[\w$*{}\s,]*?\s*from\s*)?["']([^"'\n]+)["']/g;
const DYNAMIC_IMPORT = /\bimport\s*\(\s*["']([^"'\n]+)["']\s*\)/g;

/** The modules and packages one check has seen, so each is read once. */
class BuildWalk {
  readonly #seen = new Set<string>();

  /** A module and what it imports: a file in a package's `dist/` stands for the whole package. */
  module(path: string): void {
    const file = realPath(path);
    if (file === undefined || this.#seen.has(file) || installed(file)) return;
    this.#seen.add(file);
    const root = packageRootOf(file);
    if (root !== undefined && isInside(join(root, "dist"), file)) {
      this.package(root);
      return;
    }
    if (!SCRIPT.test(file)) return;
    for (const specifier of importsOf(readFileSync(file, "utf8"))) {
      if (/^(\.{1,2}\/|\/|file:)/.test(specifier)) {
        const target = resolveRelative(specifier, file);
        if (target !== undefined) this.module(target);
      } else {
        const dir = packageDirOf(specifier, dirname(file));
        if (dir !== undefined) this.package(dir);
      }
    }
  }

  /** A package loaded built: its build, then the packages it depends on at run time. */
  package(dir: string): void {
    const root = realPath(dir);
    if (root === undefined || this.#seen.has(root) || installed(root)) return;
    this.#seen.add(root);
    checkBuild(root);
    for (const name of dependencyNames(root, RUNTIME_DEPENDENCIES)) {
      const dep = packageDirOf(name, root);
      if (dep !== undefined) this.package(dep);
    }
  }
}

/**
 * Throws for the first source file under `src/` changed after its built file
 * under `dist/`, unless the compiler's build info holds the digest of its very
 * text: a source only touched (a checkout, an undo) keeps its old built file,
 * since neither an incremental build nor a build cache writes it again.
 */
function checkBuild(root: string): void {
  const src = join(root, "src");
  const dist = join(root, "dist");
  if (!existsSync(src) || !existsSync(dist)) return;
  let compiled: ReadonlyMap<string, string> | undefined;
  for (const source of filesUnder(src)) {
    if (!SOURCE.test(source) || DECLARATION.test(source)) continue;
    const built = join(dist, relative(src, source)).replace(SOURCE, (ext) => BUILT_EXTENSION[ext] ?? ext);
    if (!existsSync(built) || modified(source) <= modified(built)) continue;
    compiled ??= compiledDigests(dist);
    if (compiled.get(source) !== createHash("sha256").update(readFileSync(source)).digest("hex")) {
      throw new StaleBuild(built, source, rebuildCommand(root));
    }
  }
}

/**
 * What the TypeScript compiler's build info in `dist/` says it compiled: each
 * source's path and the SHA-256 of its text. Empty when there is none, or its
 * shape is not the one known here (every source then counts by its time alone).
 */
function compiledDigests(dist: string): Map<string, string> {
  const digests = new Map<string, string>();
  for (const name of readdirSync(dist).filter((f) => f.endsWith(".tsbuildinfo"))) {
    try {
      const { fileNames, fileInfos } = JSON.parse(readFileSync(join(dist, name), "utf8")) as {
        fileNames?: unknown;
        fileInfos?: unknown;
      };
      if (!Array.isArray(fileNames) || !Array.isArray(fileInfos)) continue;
      fileNames.forEach((file: unknown, i: number) => {
        const info: unknown = fileInfos[i];
        const version = typeof info === "string" ? info : (info as { version?: unknown } | undefined)?.version;
        if (typeof file === "string" && typeof version === "string") digests.set(resolve(dist, file), version);
      });
    } catch {
      // Unreadable build info proves nothing: the times decide.
    }
  }
  return digests;
}

/** What rebuilds the package: the workspace's build when the package is in a pnpm workspace that has one, else its own. */
function rebuildCommand(root: string): string {
  for (let dir = dirname(root); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, "pnpm-workspace.yaml")) && hasBuildScript(dir))
      return `run \`pnpm build\` in ${shown(dir)}`;
  }
  return hasBuildScript(root) ? `run \`npm run build\` in ${shown(root)}` : `rebuild ${shown(root)}`;
}

function hasBuildScript(dir: string): boolean {
  const manifest = readManifest(dir);
  return typeof (manifest?.["scripts"] as Record<string, unknown> | undefined)?.["build"] === "string";
}

/** The specifiers a module imports at run time. */
function importsOf(text: string): string[] {
  const specifiers: string[] = [];
  for (const [, typeOnly, specifier] of text.matchAll(STATIC_IMPORT))
    if (typeOnly === undefined && specifier !== undefined) specifiers.push(specifier);
  for (const [, specifier] of text.matchAll(DYNAMIC_IMPORT)) if (specifier !== undefined) specifiers.push(specifier);
  return specifiers;
}

/** The file a relative import names; a `.js` import of a TypeScript file (run through a loader) is its `.ts`. */
function resolveRelative(specifier: string, importer: string): string | undefined {
  const path = specifier.startsWith("file:")
    ? fileURLToPath(specifier)
    : fileURLToPath(new URL(specifier, pathToFileURL(importer)));
  const typescript = path.replace(/\.([cm]?)js$/, ".$1ts").replace(/\.jsx$/, ".tsx");
  return [path, typescript].find(isFile);
}

/** The folder of the package a bare specifier names, as Node finds it from `from`: itself by name, or in a `node_modules` up the tree. */
function packageDirOf(specifier: string, from: string): string | undefined {
  if (specifier.startsWith("node:") || builtinModules.includes(specifier.split("/")[0] ?? "")) return undefined;
  const name = specifier
    .split("/")
    .slice(0, specifier.startsWith("@") ? 2 : 1)
    .join("/");
  const own = packageRootOf(join(from, "x"));
  if (own !== undefined && readManifest(own)?.["name"] === name) return own;
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (dir === dirname(dir)) return undefined;
  }
}

function dependencyNames(root: string, kinds: readonly string[]): string[] {
  const manifest = readManifest(root);
  return kinds.flatMap((kind) => Object.keys((manifest?.[kind] as Record<string, unknown> | undefined) ?? {}));
}

/** The nearest folder holding a package.json, from the file's folder up. */
function packageRootOf(file: string): string | undefined {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return dir;
    if (dir === dirname(dir)) return undefined;
  }
}

function readManifest(dir: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function* filesUnder(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== "node_modules") yield* filesUnder(path);
    else if (entry.isFile()) yield path;
  }
}

/** A module given as a path or a `file:` URL; undefined for anything else (a bare name, `data:`). */
function localPath(module: string | URL): string | undefined {
  const text = module.toString();
  if (text.startsWith("file:")) return fileURLToPath(text);
  return isAbsolute(text) ? text : undefined;
}

function realPath(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

function isFile(path: string): boolean {
  return existsSync(path) && statSync(path).isFile();
}

function modified(path: string): number {
  return statSync(path).mtimeMs;
}

function installed(path: string): boolean {
  return path.split(sep).includes("node_modules");
}

function isInside(dir: string, path: string): boolean {
  return path.startsWith(dir + sep);
}

/** A path as the person running the tests reads it: relative to where they are, when that is shorter. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path) || ".";
  return rel.length < path.length ? rel : path;
}
