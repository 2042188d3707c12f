import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { compile, packOnce, type Published, root, workspaceVersion } from "./packing.js";

// The root README's first two TypeScript blocks, the flow and the AI SDK agent, run as a newcomer
// pastes them: in an empty ESM project that installed, from the packed tarballs, exactly what the
// README's install lines name. Each block ends with `//` lines saying what it prints.

const readme = readFileSync(join(root, "README.md"), "utf8");
const fences = [...readme.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({
  lang: m[1]!,
  code: m[2]!,
  at: m.index,
}));
const [flow, agent] = fences.filter((f) => f.lang === "ts");

/** The packages of the README's `pnpm add` lines above `before`. */
function installedBefore(before: number): string[] {
  return fences
    .filter((f) => f.lang === "sh" && f.at < before)
    .flatMap((f) => f.code.split("\n"))
    .flatMap((line) => /^pnpm add ([^#]+)/.exec(line)?.[1]?.trim().split(/\s+/) ?? []);
}

/** Where the workspace installed each package the README names beside ours, so npm gets the same version. */
const VERSION_FROM: Record<string, string> = { zod: "packages/flow", ai: "packages/loop" };

/** What a block says it prints: the `//` lines that end it, `…` standing for what each run makes up (an id, a key). */
function printed(code: string): RegExp {
  const lines = code.trimEnd().split("\n");
  const said: string[] = [];
  for (let line = lines.pop(); line !== undefined && /^\s*\/\//.test(line); line = lines.pop())
    said.unshift(line.replace(/^\s*\/\/\s?/, ""));
  expect(said, `the block ends with the //-lines of what it prints:\n${code}`).not.toEqual([]);
  const pattern = said
    .join(" ")
    .split("…")
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join("[^'\"\\s]+");
  return new RegExp(`^${pattern}$`);
}

/** The modules a block imports. */
const imports = (code: string) => [...code.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]!);

/** The package a module specifier names: `@durable/loop/ai-sdk` → `@durable/loop`, `ai/test` → `ai`. */
const packageOf = (specifier: string) =>
  specifier
    .split("/")
    .slice(0, specifier.startsWith("@") ? 2 : 1)
    .join("/");

const named = agent === undefined ? [] : installedBefore(agent.at);
const ours = named.filter((name) => name.startsWith("@durable/"));
/** Ours by folder: `@durable/store-sqlite` → `store-sqlite`. */
const folders = ours.map((name) => name.slice("@durable/".length) as Published);
const { project } = packOnce(folders);

describe("the README's first examples, pasted into an empty project", () => {
  let dir: string;
  const key = randomBytes(32).toString("base64");

  beforeAll(async () => {
    expect(flow, "the README's first ts block (the flow)").toBeDefined();
    expect(agent, "the README's second ts block (the AI SDK agent)").toBeDefined();
    const theirs = named
      .filter((name) => !name.startsWith("@durable/"))
      .map((name) => {
        const from = VERSION_FROM[name];
        if (from === undefined)
          throw new Error(`The README installs ${name}: say in VERSION_FROM which workspace has it.`);
        return `${name}@${workspaceVersion(from, name)}`;
      });
    // Only to type-check the blocks, as a TypeScript user's project would: process.env is Node's.
    const types = `@types/node@${workspaceVersion("apps/packaging", "@types/node")}`;
    dir = await project("readme", folders, [...theirs, types]);
  }, 600_000);

  it("installs exactly the @durable packages of the README's install lines, and the blocks import only what those install", () => {
    expect(ours).toEqual(expect.arrayContaining(["@durable/core", "@durable/flow", "@durable/store-sqlite"]));
    expect(readdirSync(join(dir, "node_modules", "@durable")).sort()).toEqual([...folders].sort());
    const flowInstalls = installedBefore(flow!.at);
    for (const specifier of imports(flow!.code)) expect(flowInstalls).toContain(packageOf(specifier));
    for (const specifier of imports(agent!.code)) expect(named).toContain(packageOf(specifier));
  });

  it.each([
    ["the flow", () => flow!, "flow"],
    ["the AI SDK agent", () => agent!, "agent"],
  ])(
    "%s compiles in a strict TypeScript project, runs with DURABLE_KEY set, and prints what the README says",
    (_, block, file) => {
      const { code } = block();
      writeFileSync(join(dir, `${file}.mts`), code);
      compile(dir, `The README's ${file} block does not compile`, { skipLibCheck: true }, [`${file}.mts`]);
      const out = execFileSync(process.execPath, [`${file}.mjs`], {
        cwd: dir,
        encoding: "utf8",
        env: { ...process.env, DURABLE_KEY: key },
      });
      expect(out.replace(/\s+/g, " ").trim()).toMatch(printed(code));
    },
    120_000,
  );
});
