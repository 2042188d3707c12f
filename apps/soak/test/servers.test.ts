import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { adminQuery } from "@durable/test-utils/postgres";
import { afterEach, describe, expect, it } from "vitest";
import { OwnPostgres } from "../src/servers.js";

const hasInitdb = (() => {
  try {
    execFileSync("sh", ["-c", "ls /usr/lib/postgresql/*/bin/initdb"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

describe("the soak's own PostgreSQL", () => {
  const given = process.env["TMPDIR"];
  afterEach(() => {
    if (given === undefined) delete process.env["TMPDIR"];
    else process.env["TMPDIR"] = given;
  });

  // As root the server runs as the postgres user, who cannot enter a private TMPDIR (mode 700, as mktemp -d makes it).
  it.skipIf(!hasInitdb)("starts and answers under a private TMPDIR, as root or not", { timeout: 60_000 }, async () => {
    const privateDir = mkdtempSync(join(tmpdir(), "durable-private-tmp-"));
    expect(statSync(privateDir).mode & 0o777).toBe(0o700);
    process.env["TMPDIR"] = privateDir;
    const server = await OwnPostgres.start();
    try {
      await expect(adminQuery(server.url(), "SELECT 1")).resolves.toBeUndefined();
    } finally {
      await server.remove();
      rmSync(privateDir, { recursive: true, force: true });
    }
  });
});
