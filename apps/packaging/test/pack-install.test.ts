import { execFileSync, spawn, spawnSync } from "node:child_process";
import { copyFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, type ExpectStatic, expect, it } from "vitest";
import { compile, packOnce, type Published, root, workspaceVersion } from "./packing.js";

// Packs every published package, then installs some of the tarballs with plain npm
// in an empty project, as a user would, and runs them there.
const fixtures = fileURLToPath(new URL("./fixtures/", import.meta.url));
const { project, tarballs } = packOnce([
  "core",
  "flow",
  "loop",
  "store-memory",
  "store-sqlite",
  "store-redis",
  "store-prisma",
  "conformance",
  "console",
]);

/** The key the flow fixture seals with, for the console. */
const CONSOLE_ENV = { ...process.env, DURABLE_KEY: "pack-test-key-0123456789abcdef-xyz" };

/** Starts `npx durable-console <args>` in the project, reads its list page as a program would (the bearer token), stops it; `expect` is the test's own (tests run at once). */
async function consolePage(expect: ExpectStatic, dir: string, args: readonly string[]): Promise<string> {
  // In a process group of its own: npx does not pass a signal on to the bin it runs, which would outlive the test.
  const console_ = spawn("npx", ["durable-console", ...args, "--port", "0"], {
    cwd: dir,
    env: CONSOLE_ENV,
    detached: true,
  });
  const exited = new Promise((resolve) => console_.on("exit", resolve));
  try {
    let out = "";
    console_.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    await expect.poll(() => out, { timeout: 60_000 }).toMatch(/programs: http:\/\/127\.0\.0\.1:\d+ /);
    // The token from the address a browser opens; the request to the address for programs.
    const token = new URL(/durable-console: (http:\/\/\S+)/.exec(out)![1]!).searchParams.get("token")!;
    const api = /programs: (http:\/\/\S+)/.exec(out)![1]!;
    const page = await fetch(new URL("/", api), { headers: { authorization: `Bearer ${token}` } });
    expect(page.status).toBe(200);
    return await page.text();
  } finally {
    try {
      process.kill(-(console_.pid as number), "SIGTERM");
      await exited;
    } catch {
      // The group is gone: the console had stopped already.
    }
  }
}

/** Every package npm installed in a project, at any depth (`npm ls --all`). */
function allInstalled(dir: string): Set<string> {
  const out = execFileSync("npm", ["ls", "--all", "--parseable"], { cwd: dir, encoding: "utf8" });
  return new Set(
    out.split("\n").flatMap((path) => /node_modules\/((?:@[^/]+\/)?[^/]+)$/.exec(path.trim())?.slice(1) ?? []),
  );
}

/**
 * Compiles a file that imports every entry point of the installed @durable
 * packages, as a user's strict NodeNext project with `skipLibCheck: false`
 * would: every published declaration file must type-check with what the
 * install brought.
 */
function compileConsumer(dir: string, entries: string[]): void {
  writeFileSync(
    join(dir, "consumer.ts"),
    `${entries.map((e, i) => `import * as m${i} from "${e}";`).join("\n")}\nexport const modules = [${entries.map((_, i) => `m${i}`).join(", ")}];\n`,
  );
  compile(dir, "The published types do not compile for a user", { skipLibCheck: false, noEmit: true }, ["consumer.ts"]);
}

/** Every entry point of @durable/core: applications, store authors, runner packages. */
const CORE_ENTRIES = ["@durable/core", "@durable/core/store", "@durable/core/runner"];

/** Runs an ES module snippet in a project; what it printed. */
const evaluate = (dir: string, code: string) =>
  execFileSync(process.execPath, ["--input-type=module", "-e", code], { cwd: dir, encoding: "utf8" });

/** A durable loop with an AI SDK ToolSet and the installed major's own mock model; prints its status, text and tool result. */
const AI_SDK_LOOP = `import * as mocks from "ai/test";
       import { tool, jsonSchema } from "ai";
       import { MemoryCheckpointStore } from "@durable/core";
       import { runToolLoop } from "@durable/loop";
       import { aiSdkModel, durableTools } from "@durable/loop/ai-sdk";
       const Mock = mocks.MockLanguageModelV4 ?? mocks.MockLanguageModelV3;
       const usage = { inputTokens: { total: 1 }, outputTokens: { total: 1 } };
       const replies = [
         { content: [{ type: "tool-call", toolCallId: "c1", toolName: "hold", input: '{"seats":2}' }], finishReason: { unified: "tool-calls" } },
         { content: [{ type: "text", text: "held" }], finishReason: { unified: "stop" } },
       ];
       let n = 0;
       const model = new Mock({ doGenerate: async () => ({ usage, warnings: [], ...replies[n++] }) });
       const tools = durableTools({ hold: tool({ inputSchema: jsonSchema({ type: "object" }), execute: async (a) => a }) });
       const result = await runToolLoop(aiSdkModel(model), tools, [{ role: "user", content: "hi" }], { checkpoints: new MemoryCheckpointStore() });
       console.log(result.status, result.text, JSON.stringify(result.steps[0].toolResults[0].result));`;

/** A database of its own on the shared PostgreSQL server, for one project. */
function postgresDatabase(): { url: string; drop: () => void } {
  const admin = process.env["DATABASE_URL"] ?? "postgresql://postgres@127.0.0.1:5432/test";
  const name = `durable_pack_${Date.now()}_${process.pid}`;
  execFileSync("psql", [admin, "-qc", `CREATE DATABASE "${name}"`]);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => void execFileSync("psql", [admin, "-qc", `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`]),
  };
}

/** Every database driver (and Prisma driver adapter) a store may bring; each install brings only its own. */
const DRIVERS = [
  "better-sqlite3",
  "redis",
  "pg",
  "@prisma/client",
  "@prisma/adapter-pg",
  "@prisma/adapter-better-sqlite3",
];

/** How a user installs each store: the store, what they add next to it, and the drivers that must come with it. */
interface Install {
  readonly name: string;
  readonly store: Published;
  readonly extra: () => string[];
  readonly brings: string[];
  /** The store flow.mjs opens. */
  readonly run: string;
  /** A URL this install has no driver adapter for, and the adapter its one-line error must name. */
  readonly other?: { readonly url: string; readonly message: string };
}
const INSTALLS: Install[] = [
  { name: "store-memory", store: "store-memory", extra: () => [], brings: [], run: "memory" },
  { name: "store-sqlite", store: "store-sqlite", extra: () => [], brings: ["better-sqlite3"], run: "sqlite" },
  { name: "store-redis", store: "store-redis", extra: () => [], brings: ["redis"], run: "redis" },
  {
    name: "store-prisma on PostgreSQL",
    store: "store-prisma",
    extra: () => [`@prisma/adapter-pg@${workspaceVersion("packages/store-prisma", "@prisma/adapter-pg")}`],
    brings: ["@prisma/client", "@prisma/adapter-pg", "pg"],
    run: "prisma-postgresql",
    other: {
      url: "file:./other.db",
      message:
        "A file: URL needs @prisma/adapter-better-sqlite3, which is not installed: npm install @prisma/adapter-better-sqlite3",
    },
  },
  {
    name: "store-prisma on SQLite",
    store: "store-prisma",
    extra: () => [
      `@prisma/adapter-better-sqlite3@${workspaceVersion("packages/store-prisma", "@prisma/adapter-better-sqlite3")}`,
    ],
    brings: ["@prisma/client", "@prisma/adapter-better-sqlite3", "better-sqlite3"],
    run: "prisma-sqlite",
    other: {
      url: "postgresql://app@127.0.0.1:9/app",
      message: "A postgresql:// URL needs @prisma/adapter-pg, which is not installed: npm install @prisma/adapter-pg",
    },
  },
];

describe("installing from the packed tarballs with npm", () => {
  it.concurrent.each(INSTALLS)(
    "@durable/core, @durable/flow and @durable/$name run a durable flow, with only its own driver and types that compile",
    async ({ store, extra, brings, run, other }) => {
      const types = `@types/node@${workspaceVersion("apps/packaging", "@types/node")}`;
      const dir = await project(run, ["core", "flow", store], ["zod@4.6.7", types, ...extra()]);
      const all = allInstalled(dir);
      for (const driver of DRIVERS) expect(all.has(driver), `${driver} with ${run}`).toBe(brings.includes(driver));
      expect(readdirSync(join(dir, "node_modules", "@durable")).sort()).toEqual(["core", "flow", store].sort());
      compileConsumer(dir, [...CORE_ENTRIES, "@durable/flow", `@durable/${store}`]);

      copyFileSync(join(fixtures, "flow.mjs"), join(dir, "flow.mjs"));
      const database = run === "prisma-postgresql" ? postgresDatabase() : undefined;
      try {
        const env = database === undefined ? process.env : { ...process.env, DATABASE_URL: database.url };
        const out = execFileSync(process.execPath, ["flow.mjs", run], { cwd: dir, encoding: "utf8", env });
        expect(out).toMatch(
          /: done, key of 43 characters, recovering it again: CheckpointConflict, an unknown run: the root's CheckpointNotFound$/m,
        );
      } finally {
        database?.drop();
      }
      if (other !== undefined) {
        const said = evaluate(
          dir,
          `import { PrismaCheckpointStore } from "@durable/store-prisma";
         await new PrismaCheckpointStore(${JSON.stringify(other.url)}).migrate().catch((error) => console.log(\`\${error.name}: \${error.message}\`));`,
        );
        expect(said).toBe(`InvalidInput: ${other.message}\n`);
      }
    },
    600_000,
  );

  // The adapter's peer range names both majors of `ai`: AI SDK 6 here (AI SDK 7 with the conformance CLI's project).
  it("no tarball holds the path of the machine that packed it, nor a source map of sources it does not ship", () => {
    expect([...tarballs.keys()]).toHaveLength(9);
    for (const [name, file] of tarballs) {
      const files = execFileSync("tar", ["-tzf", file], { encoding: "utf8" }).split("\n");
      expect(
        files.filter((f) => f.endsWith(".map")),
        name,
      ).toEqual([]);
      const content = execFileSync("tar", ["-xzOf", file], { maxBuffer: 512 * 1024 * 1024 });
      expect(content.includes(root.replace(/\/$/, "")), `${name} holds ${root}`).toBe(false);
    }
  });

  it.concurrent("@durable/loop installs with ai@6 without peer errors, its types compile, and its AI SDK adapter runs a durable loop", async () => {
    const ai = `ai@${workspaceVersion("packages/loop", "ai-v6")}`;
    const extra = [ai, "@types/json-schema@7.0.15", `@types/node@${workspaceVersion("apps/packaging", "@types/node")}`];
    const dir = await project("loop-ai-v6", ["core", "loop"], extra, true);
    compileConsumer(dir, ["@durable/core", "@durable/loop", "@durable/loop/ai-sdk"]);
    expect(evaluate(dir, AI_SDK_LOOP)).toBe('done held {"seats":2}\n');
  }, 600_000);

  it.concurrent("npx durable-console from its tarball serves the page of a SQLite store's runs, and its types compile", async ({
    expect,
  }) => {
    const types = `@types/node@${workspaceVersion("apps/packaging", "@types/node")}`;
    const dir = await project("console", ["core", "flow", "store-sqlite", "console"], ["zod@4.6.7", types]);
    compileConsumer(dir, [...CORE_ENTRIES, "@durable/console"]);
    copyFileSync(join(fixtures, "flow.mjs"), join(dir, "flow.mjs"));
    execFileSync(process.execPath, ["flow.mjs", "sqlite"], { cwd: dir, encoding: "utf8" });
    const html = await consolePage(expect, dir, ["--store", "sqlite:runs.db"]);
    expect(html).toMatch(/<tr data-run-id="r-\d+" data-status="done">/);
  }, 600_000);

  it.concurrent("@durable/console beside @durable/store-redis alone installs no better-sqlite3, reads a Redis store, and names the package a SQLite store needs", async ({
    expect,
  }) => {
    const dir = await project("console-redis", ["core", "store-redis", "console"], ["redis@6.3.1"]);
    expect(allInstalled(dir).has("better-sqlite3")).toBe(false);
    // The bin itself: npx adds warnings of its own to stderr under pnpm's environment.
    const bin = join(dir, "node_modules", ".bin", "durable-console");
    const sqlite = spawnSync(bin, ["--store", "sqlite:runs.db", "--port", "0"], {
      cwd: dir,
      env: CONSOLE_ENV,
      encoding: "utf8",
    });
    expect({ status: sqlite.status, stderr: sqlite.stderr.trim().split("\n") }).toEqual({
      status: 2,
      stderr: [
        "This store needs @durable/store-sqlite: install it beside @durable/console (npm install @durable/store-sqlite).",
      ],
    });
    const redis = process.env["REDIS_URL"] ?? "redis://127.0.0.1:6379";
    expect(await consolePage(expect, dir, ["--store", redis, "--prefix", "pack-empty"])).toContain("<h1>Runs</h1>");
  }, 600_000);

  it.concurrent("the conformance CLI runs from its tarball against a custom store written in the project, the loop's and the kit's types compile, and the loop runs with AI SDK 7", async () => {
    const ai = `ai@${workspaceVersion("packages/loop", "ai")}`;
    // ai's own declarations import json-schema's types without depending on them: its users add them.
    const extra = [ai, "@types/json-schema@7.0.15", `@types/node@${workspaceVersion("apps/packaging", "@types/node")}`];
    const dir = await project("conformance", ["core", "flow", "loop", "conformance"], extra);
    // No peer problem with AI SDK 7 (npm ls fails on one), and the adapter runs with it.
    execFileSync("npm", ["ls", "ai", "@durable/loop"], { cwd: dir, encoding: "utf8" });
    expect(evaluate(dir, AI_SDK_LOOP)).toBe('done held {"seats":2}\n');
    compileConsumer(dir, [
      ...CORE_ENTRIES,
      "@durable/flow",
      "@durable/loop",
      "@durable/loop/ai-sdk",
      "@durable/conformance",
    ]);
    copyFileSync(join(fixtures, "my-store.mjs"), join(dir, "my-store.mjs"));
    const out = execFileSync(
      join(dir, "node_modules", ".bin", "durable-conformance"),
      ["my-store.mjs", "save", "read", "call-log", "lease"],
      {
        cwd: dir,
        encoding: "utf8",
      },
    );
    expect(out).toMatch(/PASS {2}save/);
    expect(out).toMatch(/PASS {2}read/);
    expect(out).toMatch(/PASS {2}call-log/);
    expect(out).toMatch(/PASS {2}lease/);
  }, 600_000);
});
