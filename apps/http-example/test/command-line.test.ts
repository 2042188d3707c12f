import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describeBin } from "@durable-apps/shared/bin-checks";
import { describe, expect, it } from "vitest";

describeBin("http-example", new URL("../src/main.ts", import.meta.url), [
  "--role <server|worker>",
  "--port <n>",
  "--db <path>",
  "--outbox <path>",
  "--chat-lease-ms <ms>",
]);

describe("pnpm http-example's own refusals", () => {
  const bin = (...args: string[]) =>
    spawnSync(
      process.execPath,
      ["--import", "tsx", fileURLToPath(new URL("../src/main.ts", import.meta.url)), ...args],
      {
        encoding: "utf8",
        timeout: 60_000,
      },
    );

  it("a role it does not know, a port out of range: one line on stderr, exit 2", () => {
    for (const [args, line] of [
      [["--role", "boss"], /^--role takes server or worker, not "boss"\.\n$/],
      [["--port", "70000"], /^--port takes a whole number from 0 to 65535, not 70000\.\n$/],
    ] as const) {
      const { status, stderr } = bin(...args);
      expect(stderr).toMatch(line);
      expect(status).toBe(2);
    }
  }, 60_000);
});
