import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * The checks every app's bin passes (each app runs them from its own tests):
 * `--help` says what it does, lists every option with its default and gives
 * one example, exit 0; an unknown option is exactly one line on stderr, exit 2.
 */
export function describeBin(name: string, main: URL, options: readonly string[]): void {
  const bin = (...args: string[]) =>
    // A bin that starts its work instead of answering would run on: the timeout makes that a failure.
    spawnSync(process.execPath, ["--import", "tsx", fileURLToPath(main), ...args], {
      encoding: "utf8",
      timeout: 60_000,
    });

  describe(`pnpm ${name} on the command line`, () => {
    it("--help: what it does, every option with its default, one example; exit 0", () => {
      const { status, stdout, stderr } = bin("--help");
      expect(stderr).toBe("");
      expect(status).toBe(0);
      expect(stdout).toMatch(new RegExp(`^pnpm ${name}: .+\\n\\nUsage: pnpm ${name} \\[options\\]\\n\\nOptions:\\n`));
      for (const option of options) expect(stdout).toMatch(new RegExp(`\\n  ${option}  .*\\(default: .+\\)\\n`));
      expect(stdout).toMatch(/\n {2}-h, --help {2}/);
      expect(stdout).toMatch(new RegExp(`\\n\\nExample:\\n  pnpm ${name} .+\\n$`));
    }, 60_000);

    it("an unknown option: exactly one line on stderr, exit 2", () => {
      const { status, stdout, stderr } = bin("--no-such-option");
      expect(status).toBe(2);
      expect(stdout).toBe("");
      expect(stderr).toMatch(
        new RegExp(`^pnpm ${name} has no option --no-such-option: it takes --.+ and --help\\.\\n$`),
      );
    }, 60_000);
  });
}
