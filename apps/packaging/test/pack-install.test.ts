import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Packs every published package, then installs some of the tarballs with plain npm
// in an empty project, as a user would, and runs them there.
const root = fileURLToPath(new URL("../../../", import.meta.url));
const fixtures = fileURLToPath(new URL("./fixtures/", import.meta.url));
const work = mkdtempSync(join(tmpdir(), "durable-pack-"));
const tarballs = new Map<string, string>();
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * better-sqlite3 would download its prebuilt binary from GitHub, which this
 * network does not reach; instead of compiling it in every project, npm gets
 * the binary the workspace already built, the way prebuild-install takes a
 * local prebuild.
 */
const prebuilds = join(work, "prebuilds");
function packPrebuild(): void {
  const dir = join(root, "packages", "store-sqlite", "node_modules", "better-sqlite3");
  const { version } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string };
  mkdirSync(prebuilds);
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  execFileSync("tar", ["czf", join(prebuilds, name), "-C", realpathSync(dir), "build/Release/better_sqlite3.node"]);
}

beforeAll(() => {
  packPrebuild();
  for (const name of ["core", "flow", "loop", "store-memory", "store-sqlite", "store-redis", "store-prisma", "conformance"]) {
    const out = execFileSync("pnpm", ["pack", "--pack-destination", work], { cwd: join(root, "packages", name), encoding: "utf8" });
    const file = out.trim().split("\n").at(-1)!.trim();
    tarballs.set(name, file.startsWith("/") ? file : join(work, file));
  }
}, 120_000);

function project(name: string, packages: string[], extra: string[] = []): string {
  const dir = join(work, name);
  mkdirSync(dir);
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: `try-${name}`, private: true, type: "module" }));
  execFileSync("npm", ["install", "--no-audit", "--no-fund", ...packages.map((p) => tarballs.get(p)!), ...extra], {
    cwd: dir,
    stdio: "pipe",
    env: { ...process.env, npm_config_better_sqlite3_local_prebuilds: prebuilds },
  });
  return dir;
}

const installed = (dir: string, pkg: string) => existsSync(join(dir, "node_modules", pkg));

/** Which database drivers each store brings; no other store's driver may be installed with it. */
const DRIVERS: Record<string, string[]> = {
  "store-memory": [],
  "store-sqlite": ["better-sqlite3"],
  "store-redis": ["redis"],
  "store-prisma": ["@prisma/client", "pg"],
};
const ALL_DRIVERS = ["better-sqlite3", "redis", "@prisma/client"];

describe("installing from the packed tarballs with npm", () => {
  it.each(Object.keys(DRIVERS))("@durable/core, @durable/flow and @durable/%s run a durable flow", (store) => {
    const dir = project(store, ["core", "flow", store], ["zod@4.6.7"]);
    const drivers = DRIVERS[store]!;
    for (const driver of drivers) expect(installed(dir, driver), driver).toBe(true);
    for (const other of ALL_DRIVERS.filter((d) => !drivers.includes(d) && !(store === "store-prisma" && d === "better-sqlite3"))) {
      expect(installed(dir, other), `${other} came with ${store}`).toBe(false);
    }
    copyFileSync(join(fixtures, "flow.mjs"), join(dir, "flow.mjs"));
    const out = execFileSync(process.execPath, ["flow.mjs", store.replace("store-", "")], { cwd: dir, encoding: "utf8", env: process.env });
    expect(out).toMatch(/: done, key of 43 characters, recovering it again: CheckpointConflict/);
    expect(readdirSync(join(dir, "node_modules", "@durable")).sort()).toEqual(["core", "flow", store].sort());
  }, 600_000);

  it("the conformance CLI runs from its tarball against a custom store written in the project", () => {
    const dir = project("conformance", ["core", "flow", "loop", "conformance"]);
    copyFileSync(join(fixtures, "my-store.mjs"), join(dir, "my-store.mjs"));
    const out = execFileSync(join(dir, "node_modules", ".bin", "durable-conformance"), ["my-store.mjs", "save", "read", "call-log"], {
      cwd: dir,
      encoding: "utf8",
    });
    expect(out).toMatch(/PASS {2}save/);
    expect(out).toMatch(/PASS {2}read/);
    expect(out).toMatch(/PASS {2}call-log/);
  }, 600_000);
});
