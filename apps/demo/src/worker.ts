/**
 * One demo worker process.
 *   worker.ts first  <card log> [options]   runs order after order; dies (SIGKILL) inside email_tickets of the last one
 *   worker.ts second <card log> [options]   a standing worker: takes over runs whose lease ran out (under the demo, with IPC)
 */
import { parseCommandLine } from "@durable-apps/shared/command-line";
import { CardProcessor } from "@durable-apps/shared/tickets";
import { runFirst } from "./first-worker.js";
import { demoOptions, DEMO_COMMAND } from "./options.js";
import { runSecond } from "./second-worker.js";

const { values, positionals } = parseCommandLine(DEMO_COMMAND, process.argv.slice(2));
const options = demoOptions(values);
const [mode, cardLog] = positionals as [string, string];
const card = new CardProcessor(cardLog);

if (mode === "first") await runFirst(options, card);
else await runSecond(options, card);
