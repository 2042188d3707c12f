import {
  type CommandLineSpec,
  type OptionSpecs,
  type OptionValues,
  wholeNumber,
} from "@durable-apps/shared/command-line";
import { DEFAULT_STORE } from "@durable-apps/shared/store-url";

/** The demo's command line, for its parser and its `--help`. */
export const DEMO_COMMAND = {
  command: "pnpm demo",
  about:
    "the main job: a durable run survives its worker. Worker 2 starts first, a standing worker serving the tickets flow; " +
    "worker 1 runs order after order and dies (SIGKILL) inside email_tickets of the last one. When that run's lease runs out (3 s), " +
    "worker 2 takes it over by itself: finished calls replay from the log, the call in doubt waits for your decision, and the card is charged once.",
  options: {
    store: {
      type: "string",
      default: DEFAULT_STORE,
      value: "<url>",
      about: "the store: sqlite:<path>, redis://host:port or postgresql://user@host:port/database",
    },
    runs: {
      type: "string",
      default: "3",
      value: "<n>",
      about: "how many orders worker 1 runs; above 5, a progress bar and runs per second",
    },
    "rerun-in-doubt": {
      type: "boolean",
      default: false,
      about:
        "decide for worker 2 that the call in doubt may run again (else it asks in a terminal, or leaves it in doubt)",
    },
  },
  environment: { DURABLE_KEY: "the key the workers seal checkpoints with (default: a fixed demo key)" },
  example: "pnpm demo --runs 1000 --rerun-in-doubt --store redis://127.0.0.1:6379",
} as const satisfies CommandLineSpec<OptionSpecs>;

/** The demo's command line: --store URL, --runs N, --rerun-in-doubt. */
export interface DemoOptions {
  readonly store: string;
  readonly runs: number;
  readonly rerunInDoubt: boolean;
}

/** The parsed options, checked. */
export function demoOptions(values: OptionValues<typeof DEMO_COMMAND.options>): DemoOptions {
  return { store: values.store, runs: wholeNumber("runs", values.runs), rerunInDoubt: values["rerun-in-doubt"] };
}

/** The options as arguments again, for a worker process. */
export function asArgs(o: DemoOptions): string[] {
  return ["--store", o.store, "--runs", String(o.runs), ...(o.rerunInDoubt ? ["--rerun-in-doubt"] : [])];
}
