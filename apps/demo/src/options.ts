import { parseArgs } from "node:util";
import { CommandLineError } from "./command-line-error.js";
import { DEFAULT_STORE } from "./store-url.js";

/** The demo's command line: --store URL, --runs N, --rerun-in-doubt. */
export interface DemoOptions {
  readonly store: string;
  readonly runs: number;
  readonly rerunInDoubt: boolean;
}

export function demoOptions(argv: string[]): DemoOptions & { rest: string[] } {
  const { values, positionals } = parseCommandLine(() => parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      store: { type: "string", default: DEFAULT_STORE },
      runs: { type: "string", default: "3" },
      "rerun-in-doubt": { type: "boolean", default: false },
    },
  }));
  const runs = Number(values.runs);
  if (!Number.isSafeInteger(runs) || runs < 1) throw new CommandLineError(`--runs takes a whole number ≥ 1, not ${values.runs}.`);
  return { store: values.store, runs, rerunInDoubt: values["rerun-in-doubt"], rest: positionals };
}

/** The options as arguments again, for a worker process. */
export function asArgs(o: DemoOptions): string[] {
  return ["--store", o.store, "--runs", String(o.runs), ...(o.rerunInDoubt ? ["--rerun-in-doubt"] : [])];
}

/** Runs node's argument parser, turning what it refuses into a `CommandLineError`. */
export function parseCommandLine<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw new CommandLineError(`${(error as Error).message} (the options are --store, --runs and --rerun-in-doubt)`);
  }
}
