import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import semver from "semver";
import { describe, expect, it } from "vitest";

const require = createRequire(import.meta.url);
const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
  peerDependencies: Record<string, string>;
};
const installed = (name: string) =>
  (JSON.parse(readFileSync(require.resolve(`${name}/package.json`), "utf8")) as { version: string }).version;

describe("the ai peer range", () => {
  it("accepts both AI SDK majors the adapter is tested against (6 and 7)", () => {
    const range = manifest.peerDependencies["ai"]!;
    for (const name of ["ai", "ai-v6"])
      expect(semver.satisfies(installed(name), range), `${name}@${installed(name)} in ${range}`).toBe(true);
    expect(new Set([installed("ai"), installed("ai-v6")].map((v) => semver.major(v)))).toEqual(new Set([6, 7]));
  });
});
