import { execFileSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import semver from "semver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const CHANGESET_BIN = fileURLToPath(import.meta.resolve("@changesets/cli/bin.js"));
const WORKSPACE_DIRS = ["packages", "apps"];

interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly private?: boolean;
  readonly peerDependencies?: Record<string, string>;
  readonly dependencies?: Record<string, string>;
}

/** The published @durable packages of a repository copy, by name. */
function published(root: string): Map<string, Manifest> {
  const manifests = new Map<string, Manifest>();
  for (const folder of WORKSPACE_DIRS) {
    for (const name of readdirSync(join(root, folder))) {
      const path = join(root, folder, name, "package.json");
      if (!existsSync(path)) continue;
      const manifest = JSON.parse(readFileSync(path, "utf8")) as Manifest;
      if (manifest.private !== true && manifest.name.startsWith("@durable/")) manifests.set(manifest.name, manifest);
    }
  }
  return manifests;
}

/** The range a `workspace:` spec is published as (what `pnpm publish` writes), for a dependency at `version`. */
function publishedRange(spec: string, version: string): string {
  if (!spec.startsWith("workspace:")) return spec;
  const range = spec.slice("workspace:".length);
  if (range === "*") return version;
  if (range === "^" || range === "~") return `${range}${version}`;
  return range;
}

/**
 * A throwaway copy of what `changeset version` reads: the root and package
 * manifests, pnpm-workspace.yaml and .changeset/ (with its pending changesets).
 * node_modules links to the repository's, where the changelog module lives.
 */
function copyRepository(): string {
  const copy = mkdtempSync(join(tmpdir(), "durable-release-"));
  for (const file of ["package.json", "pnpm-workspace.yaml"]) cpSync(join(ROOT, file), join(copy, file));
  cpSync(join(ROOT, ".changeset"), join(copy, ".changeset"), { recursive: true });
  for (const folder of WORKSPACE_DIRS) {
    for (const name of readdirSync(join(ROOT, folder))) {
      const manifest = join(ROOT, folder, name, "package.json");
      if (!existsSync(manifest)) continue;
      mkdirSync(join(copy, folder, name), { recursive: true });
      cpSync(manifest, join(copy, folder, name, "package.json"));
    }
  }
  symlinkSync(join(ROOT, "node_modules"), join(copy, "node_modules"), "dir");
  return copy;
}

/** Files a changeset in the copy and runs `changeset version` there. */
function version(copy: string, id: string, releases: Readonly<Record<string, "patch" | "minor" | "major">>): void {
  const front = Object.entries(releases).map(([name, type]) => `"${name}": ${type}`);
  writeFileSync(join(copy, ".changeset", `${id}.md`), `---\n${front.join("\n")}\n---\n\nA change (release check).\n`);
  execFileSync(process.execPath, [CHANGESET_BIN, "version"], {
    cwd: copy,
    stdio: "pipe",
    env: { ...process.env, CI: "1" },
  });
}

/** Fails for every @durable peer or dependency range that does not accept the version of that package in `manifests`. */
function expectRangesAccept(manifests: Map<string, Manifest>): void {
  for (const manifest of manifests.values()) {
    for (const deps of [manifest.peerDependencies, manifest.dependencies]) {
      for (const [name, spec] of Object.entries(deps ?? {})) {
        const dependency = manifests.get(name);
        if (dependency === undefined) continue;
        const range = publishedRange(spec, dependency.version);
        expect(
          semver.satisfies(dependency.version, range),
          `${manifest.name} wants ${name} ${range}, which ${dependency.version} is not in`,
        ).toBe(true);
      }
    }
  }
}

describe("release policy (0.x): a breaking change is a minor", () => {
  let copy: string;
  let before: Map<string, Manifest>;

  beforeAll(() => {
    copy = copyRepository();
    before = published(copy);
  });

  afterAll(() => {
    rmSync(copy, { recursive: true, force: true });
  });

  it("a minor of @durable/core takes every @durable package to the next minor together, none to a new major, twice in a row", () => {
    expect(before.size).toBeGreaterThanOrEqual(8);
    const start = [...before.values()][0]!.version;
    let expected = start;
    for (const round of [1, 2]) {
      version(copy, `core-minor-${round}`, { "@durable/core": "minor" });
      expected = semver.inc(expected, "minor")!;
      const after = published(copy);
      for (const [name, manifest] of after) {
        expect(
          semver.major(manifest.version),
          `${name} went from ${before.get(name)?.version} to ${manifest.version}`,
        ).toBe(semver.major(start));
        expect(manifest.version, `${name} is not in the fixed group's version`).toBe(expected);
      }
      expectRangesAccept(after);
    }
  });

  it("the checked-in peer ranges accept the current versions", () => {
    expectRangesAccept(published(ROOT));
  });
});
