/**
 * The one command-line path of every app (demo, viewer, soak, bench): node's
 * `util.parseArgs` with the app's options described once, so `--help` is
 * written from the same table the parser reads, and bad usage is one line on
 * stderr and exit 2.
 */
import { parseArgs } from "node:util";
import { CommandLineError } from "./command-line-error.js";

/** One option: how node parses it, and what `--help` says about it. */
export type OptionSpec = (
  | { readonly type: "string"; readonly default?: string; readonly multiple?: false }
  | { readonly type: "string"; readonly multiple: true }
  | { readonly type: "boolean"; readonly default?: boolean }
) & {
  /** What it does, one line. */
  readonly about: string;
  /** Its value in the help, e.g. `<url>`. */
  readonly value?: string;
  /** Its default as the help says it, where that is not the literal `default` (e.g. taken from the environment). */
  readonly defaultText?: string;
};

/** An app's command line: how it is typed, what it does, its options, the environment it reads, an example. */
export interface CommandLineSpec<O extends OptionSpecs> {
  /** How a user types it, e.g. `pnpm demo`. */
  readonly command: string;
  readonly about: string;
  readonly options: O;
  readonly environment?: Readonly<Record<string, string>>;
  readonly example: string;
}

/** Every option of a command, by its long name. */
export type OptionSpecs = Readonly<Record<string, OptionSpec>>;
type Parsed<O extends OptionSpecs> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: true }>
>;
/** The parsed values of a spec's options, typed from the spec. */
export type OptionValues<O extends OptionSpecs> = Parsed<O>["values"];

/** The help text: what the command does, every option with its default, the environment it reads, one example. */
export function helpText(spec: CommandLineSpec<OptionSpecs>): string {
  const rows: Array<[string, string]> = Object.entries(spec.options).map(([name, o]) => [
    `--${name}${o.type === "string" ? ` ${o.value ?? "<value>"}` : ""}`,
    `${o.about} (default: ${defaultOf(o)})`,
  ]);
  rows.push(["-h, --help", "print this help and exit"]);
  const table = (entries: Array<[string, string]>) => {
    const width = Math.max(...entries.map(([left]) => left.length)) + 2;
    return entries.map(([left, right]) => `  ${left.padEnd(width)}${right}`).join("\n");
  };
  const environment = Object.entries(spec.environment ?? {});
  return [
    `${spec.command}: ${spec.about}`,
    `Usage: ${spec.command} [options]`,
    `Options:\n${table(rows)}`,
    ...(environment.length === 0 ? [] : [`Environment:\n${table(environment)}`]),
    `Example:\n  ${spec.example}`,
  ].join("\n\n");
}

function defaultOf(o: OptionSpec): string {
  if (o.defaultText !== undefined) return o.defaultText;
  if (o.type === "boolean") return o.default === true ? "on" : "off";
  return "default" in o && o.default !== undefined ? o.default : "none";
}

/**
 * Parses `argv` by the spec. `--help` (or `-h`) prints the help and exits 0;
 * anything else it cannot take is a one-line `CommandLineError`. pnpm's `--`
 * is dropped. Positionals are returned (a worker process the app starts
 * takes some); `runCommand` refuses them.
 */
export function parseCommandLine<O extends OptionSpecs>(spec: CommandLineSpec<O>, argv: readonly string[]): Parsed<O> {
  const args = argv.filter((arg) => arg !== "--");
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(`${helpText(spec)}\n`);
    process.exit(0);
  }
  try {
    return parseArgs({ args, options: spec.options, strict: true, allowPositionals: true }) as Parsed<O>;
  } catch (error) {
    throw usageError(spec, error as Error & { code?: string });
  }
}

/** Node's refusal as one line that names the option and what to do. */
function usageError(spec: CommandLineSpec<OptionSpecs>, error: Error & { code?: string }): CommandLineError {
  const quoted = /'([^']*)'/.exec(error.message)?.[1] ?? "";
  const name = quoted.split(" ")[0] ?? "";
  const see = `(see ${spec.command} --help)`;
  const option = spec.options[name.replace(/^--/, "")];
  if (error.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    const known = Object.keys(spec.options).map((n) => `--${n}`);
    return new CommandLineError(`${spec.command} has no option ${name}: it takes ${known.join(", ")} and --help.`);
  }
  if (error.code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" && option !== undefined) {
    return new CommandLineError(
      option.type === "boolean"
        ? `${name} takes no value ${see}.`
        : `${name} needs a value: ${name} ${option.value ?? "<value>"} ${see}.`,
    );
  }
  return new CommandLineError(`${error.message.split("\n")[0]} ${see}.`);
}

/**
 * Parses the command line and runs the app. A `CommandLineError`, from the
 * parser or thrown later by the app (a store that does not answer, a taken
 * port), is its one line on stderr and exit 2.
 */
export async function runCommand<O extends OptionSpecs>(
  spec: CommandLineSpec<O>,
  main: (values: OptionValues<O>) => Promise<void>,
  argv: readonly string[] = process.argv.slice(2),
): Promise<void> {
  try {
    const { values, positionals } = parseCommandLine(spec, argv);
    if (positionals.length > 0)
      throw new CommandLineError(
        `${spec.command} takes no argument ${JSON.stringify(positionals[0])}: give options only (see ${spec.command} --help).`,
      );
    await main(values);
  } catch (error) {
    if (!(error instanceof CommandLineError)) throw error;
    console.error(error.message);
    process.exit(2);
  }
}

/** An option's whole number in [min, max], or a `CommandLineError` that names the option. */
export function wholeNumber(option: string, text: string, min = 1, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(text);
  if (text.trim() !== "" && Number.isSafeInteger(n) && n >= min && n <= max) return n;
  const range = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `from ${min} to ${max}`;
  throw new CommandLineError(`--${option} takes a whole number ${range}, not ${text === "" ? '""' : text}.`);
}
