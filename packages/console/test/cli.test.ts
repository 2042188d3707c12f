import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { assertFreshBuild } from "@durable/conformance";
import { afterAll, describe, expect, it } from "vitest";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { KEY, seed } from "./fixture.js";

// The built bin, as users run it: these tests refuse to start (StaleBuild) while its build is older than src/.
const cli = fileURLToPath(new URL("../dist/cli.js", import.meta.url));
assertFreshBuild(cli);
const dir = mkdtempSync(join(tmpdir(), "durable-console-cli-"));
const keyFile = join(dir, "durable.key");
writeFileSync(keyFile, `${KEY}\n`);
// A reader's key: the public half of the workers' Ed25519 key, in PEM.
const publicKeyFile = join(dir, "public.pem");
writeFileSync(publicKeyFile, generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "pem" }));
// A line taken as an HMAC key before the public key would sign: a file with a PEM key holds PEM keys only.
const mixedKeyFile = join(dir, "mixed.key");
writeFileSync(mixedKeyFile, `${KEY}\n${readFileSync(publicKeyFile, "utf8")}`);
const brokenPemFile = join(dir, "broken.pem");
writeFileSync(brokenPemFile, "-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----\n");
const started: ChildProcess[] = [];
afterAll(() => {
  for (const child of started) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the built bin to its end: its exit code and the lines it printed. */
function run(args: string[], env: Record<string, string> = {}) {
  const { status, stdout, stderr } = spawnSync(process.execPath, [cli, ...args], {
    encoding: "utf8",
    env: { PATH: process.env["PATH"] ?? "", ...env },
  });
  const lines = (text: string) => text.split("\n").filter((line) => line.length > 0);
  return { code: status, out: lines(stdout), err: lines(stderr) };
}

describe("durable-console", () => {
  it("--help says what it does, lists every option and an example, exit 0", () => {
    const { code, out, err } = run(["--help"]);
    expect(code).toBe(0);
    expect(err).toEqual([]);
    const help = out.join("\n");
    const options = [
      "--store <url>",
      "--key-file <file>",
      "--encryption-key-file <file>",
      "--allow-actions",
      "--port <n>",
    ];
    for (const option of [...options, "--events <file>"]) expect(help).toContain(option);
    expect(help).toMatch(/Example:\n\s+durable-console --store sqlite:/);
  });

  it.each([
    ["an unknown option", ["--nope"], /^Unknown option '--nope'.*\(see durable-console --help\)\.$/],
    ["no store", ["--key-file", keyFile], /^Give the store: --store/],
    ["no key", ["--store", `sqlite:${join(dir, "a.db")}`], /^The console needs the workers' key/],
    [
      "a key file that is not there",
      ["--store", "sqlite:x.db", "--key-file", join(dir, "none")],
      /^--key-file .* cannot be read/,
    ],
    [
      "a store it does not know",
      ["--store", "mongodb://x", "--key-file", keyFile],
      /^--store "mongodb:\/\/x" names no store/,
    ],
    ["a bad port", ["--store", "sqlite:x.db", "--key-file", keyFile, "--port", "http"], /^--port takes a whole number/],
    [
      "a PEM key that does not parse",
      ["--store", "sqlite:x.db", "--key-file", brokenPemFile],
      /^The key's PEM block "PUBLIC KEY" cannot be read/,
    ],
    [
      "a key file of an HMAC key and a PEM key",
      ["--store", "sqlite:x.db", "--key-file", mixedKeyFile],
      /^The key file's line 1 is not a PUBLIC KEY or PRIVATE KEY block where one must be/,
    ],
    [
      "actions with a public key",
      ["--store", `sqlite:${join(dir, "b.db")}`, "--key-file", publicKeyFile, "--allow-actions", "--port", "0"],
      /^Actions need a key that signs: an Ed25519 public key only verifies/,
    ],
    [
      "an empty encryption key",
      ["--store", "sqlite:x.db", "--key-file", keyFile, "--encryption-key-file", join(dir, "durable.key.empty")],
      /^--encryption-key-file .* cannot be read/,
    ],
  ])("%s is one line on stderr and exit code 2", (_what, args, message) => {
    const { code, out, err } = run(args);
    expect({ code, out }).toEqual({ code: 2, out: [] });
    expect(err).toHaveLength(1);
    expect(err[0]).toMatch(message);
  });

  it("serves a SQLite store on 127.0.0.1 and prints its own name with the token, and the address for programs, never the key", async () => {
    const child = spawn(
      process.execPath,
      [cli, "--store", `sqlite:${join(dir, "runs.db")}`, "--key-file", keyFile, "--port", "0"],
      {
        env: { PATH: process.env["PATH"] ?? "" },
      },
    );
    started.push(child);
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    await expect.poll(() => out, { timeout: 10_000 }).toMatch(/programs: http:\/\/127\.0\.0\.1:\d+ /);
    // A browser opens the console's own name (its cookie stays there); a program, the address, with the token.
    const url = /durable-console: (http:\/\/[0-9a-f]{16}\.localhost:\d+\/\?token=[\w-]+)/.exec(out)?.[1] ?? "";
    const api = /programs: (http:\/\/\S+)/.exec(out)?.[1] ?? "";
    expect(new URL(url).port).toBe(new URL(api).port);
    expect(out).not.toContain(KEY);
    const token = new URL(url).searchParams.get("token") ?? "";
    const page = await fetch(new URL("/", api), { headers: { authorization: `Bearer ${token}` } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<h1>Runs</h1>");
    child.kill("SIGTERM");
  });

  it("checks the key on the newest runs at start and says 'wrong key?' on the terminal", async () => {
    const db = join(dir, "seeded.db");
    const store = new SQLiteCheckpointStore(db);
    await seed(store, join(dir, "events.jsonl"));
    await store.close();
    const wrongKeyFile = join(dir, "wrong.key");
    writeFileSync(wrongKeyFile, "another-key-0123456789abcdef0123456789abcd\n");
    const start = async (key: string) => {
      const child = spawn(process.execPath, [cli, "--store", `sqlite:${db}`, "--key-file", key, "--port", "0"], {
        env: { PATH: process.env["PATH"] ?? "" },
      });
      started.push(child);
      const printed = { out: "", err: "" };
      child.stdout.on("data", (chunk: Buffer) => {
        printed.out += chunk.toString();
      });
      child.stderr.on("data", (chunk: Buffer) => {
        printed.err += chunk.toString();
      });
      await expect.poll(() => printed.out, { timeout: 10_000 }).toMatch(/programs: /);
      child.kill("SIGTERM");
      return printed.err.split("\n").filter((line) => line.length > 0);
    };
    expect(await start(wrongKeyFile)).toEqual([
      expect.stringMatching(/^durable-console: wrong key\? none of the \d+ newest runs verifies with it: give the key/),
    ]);
    expect(await start(keyFile)).toEqual([]);
  });
});
