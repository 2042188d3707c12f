import { InvalidInput } from "../base/errors.js";
import { checkCodec, checkOptionTypes, type OptionType } from "../base/option-checks.js";
import { checkStore } from "../store/check-store.js";

/**
 * The options every runner takes (`FlowRunner`, `runToolLoop`,
 * `recoverToolLoop`), by type. `checkpoints` is required and checked on its own;
 * `checkpointKey` is checked by `Sealer.withKeys`; `ctx` by `identityOf`.
 */
const RUNNER_OPTIONS: Readonly<Record<string, OptionType>> = {
  events: "function",
  approvals: "function",
  rerunInDoubt: "boolean",
  decide: "object",
  by: "string",
  takeOver: "boolean",
  lease: "object",
  answers: "object",
  name: "string",
  runId: "string",
  codec: "object",
};

/**
 * Checks the options of a runner (`FlowRunner`, `runToolLoop`,
 * `recoverToolLoop`): an options object with a store as `checkpoints`, and
 * each other option it knows of the right type. A wrong type is
 * `InvalidInput` naming the option, before anything runs.
 */
export function checkRunnerOptions(where: string, options: unknown): void {
  const given = checkOptionTypes(where, options, RUNNER_OPTIONS);
  checkStore(where, given["checkpoints"]);
  if (given["name"] === "") throw new InvalidInput(`${where}: name must not be empty.`);
  checkCodec(where, given["codec"]);
}
