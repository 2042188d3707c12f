import { execFile, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll } from "vitest";

// What the packaging tests share: packing the published packages into tarballs, and installing
// them with plain npm in an empty project, as a user would.

/** The root of the repository. */
export const root = fileURLToPath(new URL("../../../", import.meta.url));

/** The packages under packages/ that are published, by folder name. */
export type Published =
  | "core"
  | "flow"
  | "loop"
  | "store-memory"
  | "store-sqlite"
  | "store-redis"
  | "store-prisma"
  | "conformance"
  | "console";

/** The tarballs of a test file's packages, and the empty projects it installs them in. */
export interface Packed {
  /**
   * Makes an empty project and installs `packages` (by tarball) and `extra` there with npm; the installs of a
   * file's tests may run at once. `strictPeers` makes a peer dependency conflict fail the install, not just warn.
   */
  project(
    name: string,
    packages: readonly Published[],
    extra?: readonly string[],
    strictPeers?: boolean,
  ): Promise<string>;
  /** Each packed package's tarball, by folder name (once the file's tests run). */
  readonly tarballs: ReadonlyMap<string, string>;
}

/**
 * Packs `packages` once before a test file's tests (in a temp folder the file removes when it ends) and
 * gives the projects that install them. Call it at the top of a test file.
 */
export function packOnce(packages: readonly Published[]): Packed {
  const work = mkdtempSync(join(tmpdir(), "durable-pack-"));
  const tarballs = new Map<string, string>();
  const prebuilds = join(work, "prebuilds");
  // Packed one after another: a busy machine takes minutes for all nine.
  beforeAll(() => {
    packPrebuild(prebuilds);
    for (const name of packages) {
      const out = execFileSync("pnpm", ["pack", "--pack-destination", work], {
        cwd: join(root, "packages", name),
        encoding: "utf8",
      });
      const file = out.trim().split("\n").at(-1)!.trim();
      tarballs.set(name, file.startsWith("/") ? file : join(work, file));
    }
  }, 240_000);
  // Several projects' node_modules: removing them takes a while on a busy machine.
  afterAll(() => rmSync(work, { recursive: true, force: true }), 120_000);

  return {
    tarballs,
    async project(name, wanted, extra = [], strictPeers = false) {
      const dir = join(work, name);
      mkdirSync(dir);
      writeFileSync(join(dir, "package.json"), JSON.stringify({ name: `try-${name}`, private: true, type: "module" }));
      const strict = strictPeers ? ["--strict-peer-deps"] : [];
      const files = wanted.map((p) => {
        const file = tarballs.get(p);
        if (file === undefined) throw new Error(`@durable/${p} was not packed: add it to this file's packOnce([...])`);
        return file;
      });
      await promisify(execFile)("npm", ["install", "--no-audit", "--no-fund", ...strict, ...files, ...extra], {
        cwd: dir,
        env: { ...process.env, npm_config_better_sqlite3_local_prebuilds: prebuilds },
      });
      return dir;
    },
  };
}

/**
 * better-sqlite3 would download its prebuilt binary from GitHub, which this
 * network does not reach; instead of compiling it in every project, npm gets
 * the binary the workspace already built, the way prebuild-install takes a
 * local prebuild.
 */
function packPrebuild(prebuilds: string): void {
  const dir = join(root, "packages", "store-sqlite", "node_modules", "better-sqlite3");
  const { version } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string };
  mkdirSync(prebuilds);
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  execFileSync("tar", ["czf", join(prebuilds, name), "-C", realpathSync(dir), "build/Release/better_sqlite3.node"]);
}

/** The version the workspace installed of a package another package depends on, so npm gets the same. */
export function workspaceVersion(from: string, pkg: string): string {
  return (
    JSON.parse(readFileSync(join(root, from, "node_modules", pkg, "package.json"), "utf8")) as { version: string }
  ).version;
}

/**
 * Runs this workspace's TypeScript compiler in `dir` on a tsconfig.json with
 * `compilerOptions` and `files`, as a user's strict NodeNext project would;
 * when it fails, throws `failure` with the compiler's output.
 */
export function compile(dir: string, failure: string, compilerOptions: object, files: readonly string[]): void {
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: "NodeNext",
        moduleResolution: "NodeNext",
        target: "ES2022",
        types: ["node"],
        ...compilerOptions,
      },
      files,
    }),
  );
  const tsc = fileURLToPath(new URL("../node_modules/typescript/bin/tsc", import.meta.url));
  try {
    execFileSync(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: dir, encoding: "utf8", stdio: "pipe" });
  } catch (error) {
    throw new Error(`${failure} in ${dir}:\n${(error as { stdout?: string }).stdout ?? String(error)}`);
  }
}
