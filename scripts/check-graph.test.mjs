// The package-graph check finds what it is for, on a small workspace of its own.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import {
  checkGraph,
  crossPackagePaths,
  fileCycles,
  findCycles,
  listFiles,
  readPackages,
  upwardImports,
} from "./check-graph.mjs";

const roots = [];
after(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** A git work tree with pnpm-workspace.yaml and the given files (a package.json value is an object). */
function workspace(files) {
  const root = mkdtempSync(join(tmpdir(), "check-graph-"));
  roots.push(root);
  const all = { "pnpm-workspace.yaml": "packages:\n  - packages/*\n  - 'apps/*'\n\ncatalog:\n  x: 1\n", ...files };
  for (const [path, content] of Object.entries(all)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), typeof content === "string" ? content : JSON.stringify(content));
  }
  execFileSync("git", ["init", "-q"], { cwd: root });
  return root;
}

// A specifier written as a template literal in the fixture's source text.
// biome-ignore lint/suspicious/noTemplateCurlyInString: this is source text, not a template.
const TEMPLATED = "../../b/test/${name}.ts";

const manifest = (name, fields = {}) => ({ name, version: "0.0.0", ...fields });

describe("relative paths across packages", () => {
  const root = workspace({
    "shared.ts": "export const x = 1;",
    "packages/a/package.json": manifest("a", { devDependencies: { b: "workspace:*" } }),
    "packages/b/package.json": manifest("b"),
    "apps/c/package.json": manifest("c"),
    "packages/a/test/t.ts": [
      'import { one } from "../../b/src/index.js";',
      'export { two } from "../../b/test/helpers.js";',
      'const three = await import("../../../apps/c/src/main.ts");',
      `const four = new URL(\`${TEMPLATED}\`, import.meta.url);`,
      'const five = require.resolve("../../b/package.json");',
      // These stay inside a or outside every package, or go by name:
      'import { own } from "../src/index.js";',
      'import { root } from "../../../shared.ts";',
      'import { b } from "b";',
      'const six = new URL("../../../", import.meta.url);',
    ].join("\n"),
  });

  it("finds each way of naming another package's file by path, and nothing else", () => {
    const found = crossPackagePaths(root, readPackages(root), listFiles(root));
    assert.deepEqual(found.map((f) => [f.specifier, f.from, f.to]).sort(), [
      ["../../../apps/c/src/main.ts", "a", "c"],
      ["../../b/package.json", "a", "b"],
      ["../../b/src/index.js", "a", "b"],
      [TEMPLATED, "a", "b"],
      ["../../b/test/helpers.js", "a", "b"],
    ]);
  });

  it("fails on each of them", () => {
    assert.equal(checkGraph(root).problems.length, 5);
  });
});

describe("dependency cycles between packages", () => {
  it("finds one through dev and peer dependencies, with its path", () => {
    const root = workspace({
      "packages/a/package.json": manifest("a", { dependencies: { b: "workspace:^", lodash: "1" } }),
      "packages/b/package.json": manifest("b", { devDependencies: { c: "workspace:^" } }),
      "apps/c/package.json": manifest("c", { peerDependencies: { a: "workspace:^0" } }),
    });
    assert.deepEqual(findCycles(readPackages(root)), [["a", "b", "c", "a"]]);
    assert.deepEqual(checkGraph(root).problems, ["dependency cycle: a -> b -> c -> a"]);
  });

  it("finds none in a graph that only points one way, and a package may not depend on itself", () => {
    const packages = [
      { name: "core", deps: [] },
      { name: "store", deps: ["core"] },
      { name: "kit", deps: ["core", "store"] },
    ];
    assert.deepEqual(findCycles(packages), []);
    assert.deepEqual(findCycles([{ name: "self", deps: ["self"] }]), [["self", "self"]]);
  });
});

describe("layers inside a package", () => {
  const layers = { "packages/a": ["low", "mid", "left|right"] };
  const root = workspace({
    "packages/a/package.json": manifest("a"),
    "packages/a/src/index.ts": 'export * from "./left/l.js";',
    "packages/a/src/low/x.ts": 'import { m } from "../mid/m.js";\nimport { y } from "./y.js";',
    "packages/a/src/low/y.ts": "export const y = 1;",
    "packages/a/src/mid/m.ts": 'import { y } from "../low/y.js";\nimport { i } from "../index.js";',
    "packages/a/src/left/l.ts": 'import { r } from "../right/r.js";\nimport { m } from "../mid/m.js";',
    "packages/a/src/right/r.ts": "export const r = 1;",
    "packages/a/src/stray/s.ts": "export const s = 1;",
  });

  it("finds an import that points up, one across a shared rank, one of an entry file, and a folder out of the order", () => {
    const found = upwardImports(root, listFiles(root), layers).map((f) => [f.file, f.specifier, f.problem]);
    assert.deepEqual(found.sort(), [
      ["packages/a/src/left/l.ts", "../right/r.js", "left may not import right"],
      ["packages/a/src/low/x.ts", "../mid/m.js", "low may not import mid"],
      ["packages/a/src/mid/m.ts", "../index.js", "mid may not import an entry file"],
      ["packages/a/src/stray/s.ts", "", "packages/a/src/stray is not in the layer order"],
    ]);
  });

  it("fails the real workspace's check on an import planted in core that points up", () => {
    const planted = workspace({
      "packages/core/package.json": manifest("@durable/core"),
      "apps/none/README.md": "",
      "packages/core/src/base/errors.ts": 'import { RunDriver } from "../driver/run-driver.js";',
      "packages/core/src/driver/run-driver.ts": 'import { x } from "../base/errors.js";',
    });
    const { problems } = checkGraph(planted);
    assert.equal(problems.length, 2);
    assert.match(problems.join("\n"), /import cycle: packages\/core\/src\/base\/errors\.ts -> /);
    assert.match(
      problems.join("\n"),
      /packages\/core\/src\/base\/errors\.ts -> \.\.\/driver\/run-driver\.js: base may not import driver/,
    );
  });
});

describe("import cycles between files", () => {
  it("finds a loop of two and of three files, and none in files that only point one way", () => {
    const root = workspace({
      "packages/a/package.json": manifest("a"),
      "apps/none/README.md": "",
      "packages/a/src/one.ts": 'import { two } from "./two.js";',
      "packages/a/src/two.ts": 'import type { one } from "./one.js";',
      "packages/a/src/three.ts": 'import { four } from "./deep/four.js";',
      "packages/a/src/deep/four.ts": 'import { five } from "../five.js";',
      "packages/a/src/five.ts": 'import { three } from "./three.js";\nimport { one } from "./one.js";',
      "packages/a/test/t.ts": 'import { one } from "../src/one.js";',
    });
    const cycles = fileCycles(root, readPackages(root), listFiles(root)).map((cycle) => cycle.join(" -> "));
    assert.deepEqual(cycles.sort(), [
      "packages/a/src/deep/four.ts -> packages/a/src/five.ts -> packages/a/src/three.ts -> packages/a/src/deep/four.ts",
      "packages/a/src/one.ts -> packages/a/src/two.ts -> packages/a/src/one.ts",
    ]);
  });
});
