// Checks the workspace's package graph: no package reaches into another by a
// relative path (it names the other package as a dependency and imports it by
// name), the dependencies between workspace packages have no cycle, no two
// source files of a package import each other (directly or round a loop), and
// a layered package's folders import only the folders below them.
// Usage: node scripts/check-graph.mjs [root]
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const DEPENDENCY_FIELDS = ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"];
const CODE = /\.(?:[cm]?[jt]s|[jt]sx)$/;
// Every way a module names another one by path: import/export … from, import "…",
// import(…), require(…), require.resolve(…), import.meta.resolve(…), new URL(…, import.meta.url).
const SPECIFIERS = [
  /\bfrom\s*["']([^"']+)["']/g,
  /\bimport\s*\(?\s*["']([^"']+)["']/g,
  /\brequire(?:\.resolve)?\s*\(\s*["']([^"']+)["']/g,
  /\bimport\.meta\.resolve\s*\(\s*["']([^"']+)["']/g,
  /\bnew\s+URL\s*\(\s*["'`]([^"'`]+)["'`]\s*,\s*import\.meta\.url/g,
];

/**
 * The packages whose `src` is built in layers: its folders from the bottom up.
 * A folder's files import only their own folder and the folders before it;
 * folders joined by `|` share a rank and import neither the other. Files at the
 * top of `src` (the entry files) may import any folder.
 */
export const LAYERS = {
  "packages/core": ["base", "telemetry", "store", "seal", "log", "calls", "run", "driver|operator"],
  "packages/conformance": ["harness", "process", "cases"],
};

/** The workspace's packages: name, folder (relative, with `/`) and the workspace packages it depends on. */
export function readPackages(root) {
  const packages = workspaceFolders(root).map((dir) => {
    const manifest = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8"));
    const names = DEPENDENCY_FIELDS.flatMap((field) => Object.keys(manifest[field] ?? {}));
    return { name: manifest.name, dir, names: new Set(names) };
  });
  const workspace = new Set(packages.map((p) => p.name));
  return packages.map(({ name, dir, names }) => ({
    name,
    dir,
    deps: [...names].filter((n) => workspace.has(n)).sort(),
  }));
}

/** The folders pnpm-workspace.yaml's `packages:` list names: `folder/*` or one folder. */
function workspaceFolders(root) {
  const lines = readFileSync(join(root, "pnpm-workspace.yaml"), "utf8").split("\n");
  const start = lines.findIndex((line) => /^packages:\s*$/.test(line));
  if (start < 0) throw new Error("pnpm-workspace.yaml has no `packages:` list");
  const patterns = [];
  for (const line of lines.slice(start + 1)) {
    const item = /^\s+-\s*["']?([^"'#\s]+)["']?\s*(?:#.*)?$/.exec(line);
    if (item === null && /^\S/.test(line)) break;
    if (item !== null) patterns.push(item[1]);
  }
  return patterns.flatMap((pattern) => {
    if (!pattern.endsWith("/*")) return existsSync(join(root, pattern, "package.json")) ? [pattern] : [];
    const parent = pattern.slice(0, -2);
    if (/[*?{[]/.test(parent))
      throw new Error(`pnpm-workspace.yaml: only "folder/*" patterns are read, not ${pattern}`);
    return readdirSync(join(root, parent), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && existsSync(join(root, parent, entry.name, "package.json")))
      .map((entry) => `${parent}/${entry.name}`);
  });
}

/** Each cycle of dependencies between packages, as names from the first back to itself. */
export function findCycles(packages) {
  const deps = new Map(packages.map((p) => [p.name, p.deps]));
  const state = new Map(); // name -> "open" while on the path, "done" after
  const path = [];
  const cycles = new Map();
  const visit = (name) => {
    state.set(name, "open");
    path.push(name);
    for (const next of deps.get(name) ?? []) {
      if (state.get(next) === "open") {
        const cycle = [...path.slice(path.indexOf(next)), next];
        cycles.set([...new Set(cycle)].sort().join(" "), cycle);
      } else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(name, "done");
  };
  for (const { name } of packages) if (!state.has(name)) visit(name);
  return [...cycles.values()];
}

/** Each relative specifier in a package's file that lands in another package's folder. */
export function crossPackagePaths(root, packages, files) {
  const ownerOf = (path) => packages.find((p) => path === p.dir || path.startsWith(`${p.dir}/`));
  const found = [];
  for (const file of files) {
    const owner = ownerOf(file);
    if (owner === undefined || !CODE.test(file)) continue;
    for (const specifier of specifiersOf(readFileSync(join(root, file), "utf8"))) {
      if (!specifier.startsWith(".")) continue;
      const target = fromRoot(root, resolve(root, dirname(file), specifier));
      const other = ownerOf(target);
      if (other !== undefined && other !== owner) found.push({ file, specifier, from: owner.name, to: other.name });
    }
  }
  return found;
}

/** Each relative specifier a module names, read from its text. */
function specifiersOf(text) {
  return new Set(SPECIFIERS.flatMap((pattern) => [...text.matchAll(pattern)].map((m) => m[1])));
}

/** A path relative to the root, with `/`. */
function fromRoot(root, path) {
  return relative(root, path).split(sep).join("/");
}

/** Each import between a layered package's folders that points up, or across a shared rank. */
export function upwardImports(root, files, layers = LAYERS) {
  const found = [];
  for (const [dir, order] of Object.entries(layers)) {
    const rank = new Map(order.flatMap((names, i) => names.split("|").map((name) => [name, i])));
    const layerOf = (file) => {
      const inside = file.slice(`${dir}/src/`.length).split("/");
      return inside.length > 1 ? inside[0] : undefined;
    };
    for (const file of files) {
      if (!file.startsWith(`${dir}/src/`) || !CODE.test(file)) continue;
      const from = layerOf(file);
      if (from === undefined) continue;
      if (!rank.has(from)) {
        found.push({ file, specifier: "", problem: `${dir}/src/${from} is not in the layer order` });
        continue;
      }
      for (const specifier of specifiersOf(readFileSync(join(root, file), "utf8"))) {
        if (!specifier.startsWith(".")) continue;
        const target = fromRoot(root, resolve(root, dirname(file), specifier));
        if (!target.startsWith(`${dir}/src/`)) continue;
        const to = layerOf(target);
        if (to === from) continue;
        if (to === undefined || !rank.has(to) || rank.get(to) >= rank.get(from))
          found.push({ file, specifier, problem: `${from} may not import ${to ?? "an entry file"}` });
      }
    }
  }
  return found;
}

/** Each loop of imports between the source files of one package, as paths from the first back to itself. */
export function fileCycles(root, packages, files) {
  const sources = files.filter((file) => CODE.test(file) && packages.some((p) => file.startsWith(`${p.dir}/src/`)));
  const known = new Set(sources);
  const imports = new Map(
    sources.map((file) => {
      const targets = [...specifiersOf(readFileSync(join(root, file), "utf8"))]
        .filter((specifier) => specifier.startsWith("."))
        .map((specifier) => fromRoot(root, resolve(root, dirname(file), specifier)).replace(/\.js$/, ".ts"))
        .filter((target) => known.has(target) && target !== file);
      return [file, targets];
    }),
  );
  return findCycles([...imports].map(([name, deps]) => ({ name, deps })));
}

/** The files git would commit (tracked or new, not ignored), relative to the root. */
export function listFiles(root) {
  const out = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: root });
  return out
    .toString("utf8")
    .split("\0")
    .filter((file) => file !== "" && existsSync(join(root, file)));
}

/** Every problem in the graph, as lines to print; none when it is sound. */
export function checkGraph(root) {
  const packages = readPackages(root);
  const files = listFiles(root);
  const problems = findCycles(packages).map((cycle) => `dependency cycle: ${cycle.join(" -> ")}`);
  for (const { file, specifier, from, to } of crossPackagePaths(root, packages, files)) {
    problems.push(`${file} -> ${specifier}: ${from} reaches into ${to} by path; import it by package name instead`);
  }
  for (const cycle of fileCycles(root, packages, files)) problems.push(`import cycle: ${cycle.join(" -> ")}`);
  for (const { file, specifier, problem } of upwardImports(root, files)) {
    problems.push(
      `${file}${specifier === "" ? "" : ` -> ${specifier}`}: ${problem} (see LAYERS in scripts/check-graph.mjs)`,
    );
  }
  return { packages, problems };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), ".."));
  const { packages, problems } = checkGraph(root);
  for (const problem of problems) console.error(problem);
  const edges = packages.reduce((sum, p) => sum + p.deps.length, 0);
  console.log(
    `package graph: ${packages.length} packages, ${edges} dependencies between them, ${problems.length} problem(s)`,
  );
  process.exitCode = problems.length > 0 ? 1 : 0;
}
