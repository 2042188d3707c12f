import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { assertFreshBuild } from "@durable/conformance";
import { afterAll, describe, expect, it } from "vitest";
import { removeSqlite, sqliteUrl } from "./databases.js";

// The built bin, as users run it: these tests refuse to start (StaleBuild) while its build is older than src/.
const cli = fileURLToPath(new URL("../dist/cli.js", import.meta.url));
assertFreshBuild(cli);
afterAll(removeSqlite);

/** Runs the built bin; its exit code and the lines it printed. */
function run(...args: string[]) {
  const { status, stdout, stderr } = spawnSync(process.execPath, [cli, ...args], { encoding: "utf8" });
  const lines = (text: string) => text.split("\n").filter((line) => line.length > 0);
  return { code: status, out: lines(stdout), err: lines(stderr) };
}

describe("durable-prisma migrate", () => {
  it("applies the shipped migrations from a shell, then finds the schema up to date", () => {
    const target = sqliteUrl();
    expect(run("migrate", target, "--table-prefix", "cli_").out).toContain(
      "Applied: 0001_init, 0002_leases, 0003_inspect, 0004_decisions, 0005_events, 0006_queues, 0007_streams",
    );
    expect(run("migrate", target, "--table-prefix", "cli_").out).toContain("The schema is up to date.");
  });

  it("--help says what it does and lists every option with its default and an example, exit 0", () => {
    const { code, out, err } = run("--help");
    expect(code).toBe(0);
    expect(err).toEqual([]);
    const help = out.join("\n");
    expect(help).toMatch(/--schema <name>.*\(default: public\)/);
    expect(help).toMatch(/--table-prefix <prefix>.*\(default: durable_\)/);
    expect(help).toMatch(/-h, --help/);
    expect(help).toMatch(/Example:\n\s+durable-prisma migrate postgresql:\/\//);
  });

  it.each([
    ["an unknown option", ["migrate", "file:x.db", "--nope"], /^Unknown option '--nope'\./],
    [
      "an option without its value",
      ["migrate", "file:x.db", "--schema"],
      /^Option '--schema <value>' argument missing\./,
    ],
    ["no command", [], /^Usage: durable-prisma migrate/],
    ["another command", ["push", "file:x.db"], /^Unknown command "push"\./],
    ["no URL", ["migrate"], /^migrate needs the database URL\./],
    [
      "a URL of another database",
      ["migrate", "mysql://app@db/app"],
      /^PrismaCheckpointStore takes a postgresql:\/\/… or file:… URL, not "mysql:\/\/…@db\/app"\./,
    ],
    [
      "a schema that is not a plain name",
      ["migrate", "postgresql://app@db/app", "--schema", "a;b"],
      /^schema "a;b" must be letters/,
    ],
    ["a schema for SQLite", ["migrate", "file:x.db", "--schema", "tenant"], /^schema is for PostgreSQL/],
    [
      "a table prefix that is not a plain name",
      ["migrate", "file:x.db", "--table-prefix", "1x"],
      /^tablePrefix "1x" must be letters/,
    ],
  ])("%s is one line on stderr and exit code 2", (_, args, message) => {
    const { code, out, err } = run(...args);
    expect(err).toHaveLength(1);
    expect(err[0]).toMatch(message);
    expect(out).toEqual([]);
    expect(code).toBe(2);
  });
});
