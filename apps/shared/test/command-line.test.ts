import { describe, expect, it } from "vitest";
import { CommandLineError } from "../src/command-line-error.js";
import {
  helpText,
  parseCommandLine,
  wholeNumber,
  type CommandLineSpec,
  type OptionSpecs,
} from "../src/command-line.js";

describe("the shared command line", () => {
  const spec = {
    command: "pnpm x",
    about: "does x.",
    options: {
      size: { type: "string", default: "3", value: "<n>", about: "how big" },
      fast: { type: "boolean", default: false, about: "go fast" },
    },
    example: "pnpm x --size 4",
  } as const satisfies CommandLineSpec<OptionSpecs>;

  it("parses by the same table the help is written from, and drops pnpm's --", () => {
    expect(parseCommandLine(spec, ["--", "--size", "4", "--fast"]).values).toEqual({ size: "4", fast: true });
    expect(helpText(spec)).toContain(
      "  --size <n>  how big (default: 3)\n  --fast      go fast (default: off)\n  -h, --help  print this help and exit",
    );
  });

  it.each([
    [["--size"], "--size needs a value: --size <n> (see pnpm x --help)."],
    [["--fast=yes"], "--fast takes no value (see pnpm x --help)."],
    [["-q"], "pnpm x has no option -q: it takes --size, --fast and --help."],
  ])("%j is one CommandLineError line", (args, message) => {
    expect(() => parseCommandLine(spec, args)).toThrow(new CommandLineError(message));
  });

  it("whole numbers: in range, or a line that names the option", () => {
    expect(wholeNumber("port", "0", 0, 65535)).toBe(0);
    expect(() => wholeNumber("runs", "1.5")).toThrow("--runs takes a whole number ≥ 1, not 1.5.");
    expect(() => wholeNumber("port", "70000", 0, 65535)).toThrow(
      "--port takes a whole number from 0 to 65535, not 70000.",
    );
  });
});
