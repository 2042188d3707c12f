import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const git = (...args: string[]) => execFileSync("git", args, { cwd: ROOT, encoding: "utf8" });

describe("repository hygiene", () => {
  it("commits no file its .gitignore ignores", () => {
    expect(git("ls-files", "--cached", "--ignored", "--exclude-standard").trim()).toBe("");
  });

  it("ignores the scratch files a crash test's worker leaves (.crash-*.effects)", () => {
    const probe = "packages/store-prisma/test/.crash-PostgreSQL-1.effects";
    expect(git("check-ignore", "--no-index", probe).trim()).toBe(probe);
  });
});
