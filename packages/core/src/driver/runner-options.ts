import type { ValueCodec } from "../base/codec.js";
import { InvalidInput } from "../base/errors.js";
import { checkCodec, checkOptions, type OptionTable } from "../base/option-checks.js";
import type { EventSink } from "../log/events.js";
import { leaseTerms, type LeaseOptions } from "../run/lease.js";
import { runStorage, STORAGE_OPTIONS, type StorageOptions } from "../run/storage.js";
import { streamTerms, type StreamOptions } from "../log/run-stream.js";
import { checkStore } from "../store/check-store.js";
import type { DriverOptions, RecoverEachOptions, RecoverOptions } from "./program.js";

/** What every runner (`FlowRunner`, the tool loop) takes: where its runs are kept, its events, its leases, its codec. */
export interface RunnerOptions extends StorageOptions {
  readonly events?: EventSink;
  /**
   * With `encryptionKey`, events leave out the arguments of calls in doubt and
   * error messages (the store holds them encrypted; an event log would hold
   * them in the clear). True gives the sink them too: for a sink as private
   * as the key.
   */
  readonly plainEvents?: boolean;
  /** This worker's leases on the runs it drives: its id (default `workerId()`) and their length (default 30 s). */
  readonly lease?: LeaseOptions;
  /** How values that are not plain JSON are stored (default: they must be plain JSON); the same on every worker. */
  readonly codec?: ValueCodec;
  /**
   * Each drive writes its run's stream to the store (`true`, or
   * `StreamOptions`; see docs/protocol.md, "Streams"): a loop's model output
   * and tool results, and what tools write (`ctx.writeData`), for
   * `followRun` in any process. The store must keep streams. Give it to every
   * worker: a drive without it streams nothing.
   */
  readonly stream?: boolean | StreamOptions;
}

/**
 * The options of `RunnerOptions`, by how they are checked (`lease` also by
 * `leaseTerms`, `codec` by `checkRunnerOptions`). A runner's own table spreads it.
 */
export const RUNNER_OPTIONS: OptionTable<RunnerOptions> = {
  ...STORAGE_OPTIONS,
  events: "function",
  plainEvents: "boolean",
  lease: "object",
  codec: true,
  stream: true,
};

/** What a runner's options give its run drivers (`where` names the runner in errors): storage, events, leases, codec, stream. */
export function driverOptions(where: string, options: RunnerOptions): DriverOptions {
  return {
    ...runStorage(where, options),
    events: options.events,
    plainEvents: options.plainEvents,
    lease: leaseTerms(where, options.lease),
    codec: options.codec,
    stream: streamTerms(where, options.stream),
  };
}

/** The options of `recover`, `retry` and `resume` (`ctx` is checked by `identityOf`, `decide` when it is read). */
export const RECOVER_OPTIONS: OptionTable<RecoverOptions> = {
  ctx: true,
  rerunInDoubt: "boolean",
  decide: "object",
  by: "string",
  takeOver: "boolean",
  onClaimed: "function",
  signal: "object",
};

/** The options of `recoverEach` and `recoverAll` (`concurrency` is checked by `recoverEach`). */
export const RECOVER_EACH_OPTIONS: OptionTable<RecoverEachOptions> = { ...RECOVER_OPTIONS, concurrency: true };

/**
 * Checks the options of a runner (`FlowRunner`, `runToolLoop`, …) against
 * its `table` of options: an options object with no unknown key, a store as
 * `checkpoints`, each other option of its type, a non-empty `name`, a codec.
 * Anything else is `InvalidInput` naming the option, before anything runs.
 */
export function checkRunnerOptions<T extends RunnerOptions>(
  where: string,
  options: unknown,
  table: OptionTable<T>,
): void {
  const given = checkOptions(where, options, table);
  checkStore(where, given["checkpoints"]);
  if (given["name"] === "") throw new InvalidInput(`${where}: name must not be empty.`);
  checkCodec(where, given["codec"]);
}
