import { createHash } from "node:crypto";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StaleBuild, assertFreshBuild, assertFreshDependencies } from "../src/harness/fresh-build.js";
import { memory } from "./broken-stores.js";
import { failingCases } from "../src/failing-cases.js";

// A throwaway workspace on disk: packages with `src/` and `dist/`, linked or installed in `node_modules`.
let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "durable-fresh-build-"));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const AN_HOUR_AGO = Date.now() / 1000 - 3600;

/** Writes files under the workspace; each is `[path, content]`. */
function write(...files: Array<[string, string]>): void {
  for (const [path, content] of files) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
}

/** A package built an hour ago from its one source file, which is written now unless `built` (then it is as old as its build). */
function builtPackage(
  dir: string,
  manifest: Record<string, unknown>,
  options: { built?: boolean; imports?: string } = {},
): void {
  write(
    [`${dir}/package.json`, JSON.stringify({ scripts: { build: "tsc -b" }, ...manifest })],
    [`${dir}/src/index.ts`, `${options.imports ?? ""}export const version: string = "new";\n`],
    [`${dir}/dist/index.js`, `${options.imports ?? ""}export const version = "old";\n`],
  );
  utimesSync(join(root, dir, "dist/index.js"), AN_HOUR_AGO, AN_HOUR_AGO);
  if (options.built === true) utimesSync(join(root, dir, "src/index.ts"), AN_HOUR_AGO - 60, AN_HOUR_AGO - 60);
}

/** Links `name` into `from`'s node_modules, as a workspace links a package. */
function link(from: string, name: string, to: string): void {
  mkdirSync(join(root, from, "node_modules"), { recursive: true });
  symlinkSync(join(root, to), join(root, from, "node_modules", name));
}

function staleness(check: () => void): string | undefined {
  try {
    check();
    return undefined;
  } catch (error) {
    if (error instanceof StaleBuild) return error.message;
    throw error;
  }
}

describe("the kit's worker processes never run a stale build", () => {
  it("refuses to start the crash and race groups' workers when the opener loads a build older than its source", async () => {
    builtPackage("store", { name: "my-store" });
    write([
      "store/test/open.mjs",
      `import "../dist/index.js";\nexport default () => { throw new Error("a stale worker started"); };\n`,
    ]);
    const opener = pathToFileURL(join(root, "store/test/open.mjs")).href;
    const init = { ...memory, name: "stale", capabilities: { multiProcess: { opener, handle: () => "" } } };
    // The groups' folders go under a TMPDIR of this test's own, which must be empty after: a refused start leaves none.
    const groupsTmp = join(root, "tmp");
    mkdirSync(groupsTmp);
    const tmp = process.env["TMPDIR"];
    process.env["TMPDIR"] = groupsTmp;
    try {
      for (const group of ["crash", "race"] as const) {
        const failures = [...(await failingCases(init, group)).values()];
        expect(failures).toHaveLength(1);
        expect(failures[0]).toMatch(
          /^Stale build: \S*store\/dist\/index\.js is older than its source \S*store\/src\/index\.ts; run `npm run build` in \S*store first\.$/,
        );
      }
    } finally {
      if (tmp === undefined) delete process.env["TMPDIR"];
      else process.env["TMPDIR"] = tmp;
    }
    expect(readdirSync(groupsTmp)).toEqual([]);
  });

  it("accepts a build newer than its source, or one whose build info compiled the source's very text", () => {
    builtPackage("fresh", { name: "fresh" }, { built: true });
    expect(staleness(() => assertFreshBuild(join(root, "fresh/dist/index.js")))).toBeUndefined();
    // A source touched but unchanged (a checkout, an undo): neither an incremental build nor a build cache writes its built file again.
    builtPackage("touched", { name: "touched" });
    const buildInfo = (text: string) =>
      JSON.stringify({
        fileNames: ["../src/index.ts"],
        fileInfos: [{ version: createHash("sha256").update(text).digest("hex") }],
      });
    write(["touched/dist/tsconfig.tsbuildinfo", buildInfo(readFileSync(join(root, "touched/src/index.ts"), "utf8"))]);
    expect(staleness(() => assertFreshBuild(join(root, "touched/dist/index.js")))).toBeUndefined();
    // The build info of other text proves nothing.
    write(["touched/dist/tsconfig.tsbuildinfo", buildInfo("export const version = 0;\n")]);
    expect(staleness(() => assertFreshBuild(join(root, "touched/dist/index.js")))).toMatch(
      /touched\/dist\/index\.js is older than its source/,
    );
  });

  it("follows imports through the source a loader runs and into the packages it names, and says the workspace's build command", () => {
    write(
      ["pnpm-workspace.yaml", "packages: ['*']\n"],
      ["package.json", JSON.stringify({ scripts: { build: "turbo run build" } })],
    );
    builtPackage("lib", { name: "lib" });
    builtPackage(
      "store",
      { name: "store", dependencies: { lib: "workspace:^" } },
      { built: true, imports: `import "lib";\n` },
    );
    link("store", "lib", "lib");
    write(
      ["store/test/open.ts", `import { x } from "./helper.js";\n`],
      ["store/test/helper.ts", `import { version } from "../dist/index.js";\n`],
    );
    expect(staleness(() => assertFreshBuild(pathToFileURL(join(root, "store/test/open.ts"))))).toMatch(
      /^Stale build: \S*lib\/dist\/index\.js is older than its source \S*lib\/src\/index\.ts; run `pnpm build` in \S+ first\.$/,
    );
  });

  it("ignores installed packages and type-only imports, which load nothing built", () => {
    builtPackage("store/node_modules/installed", { name: "installed" });
    builtPackage("types", { name: "types" });
    write(
      ["store/package.json", "{}"],
      ["store/open.mjs", `import "installed";\n`],
      ["store/open.ts", `import type { version } from "../types/dist/index.js";\n`],
    );
    expect(
      staleness(() => assertFreshBuild(join(root, "store/open.mjs"), join(root, "store/open.ts"))),
    ).toBeUndefined();
  });

  it("checks every package a package's tests depend on, but not the package itself, whose tests run its source", () => {
    builtPackage("tested", { name: "tested", devDependencies: { helper: "workspace:^" } });
    builtPackage("helper", { name: "helper" });
    link("tested", "helper", "helper");
    expect(staleness(() => assertFreshDependencies(join(root, "tested")))).toMatch(
      /helper\/dist\/index\.js is older than its source/,
    );
    builtPackage("helper", { name: "helper" }, { built: true });
    expect(staleness(() => assertFreshDependencies(join(root, "tested")))).toBeUndefined();
  });
});
