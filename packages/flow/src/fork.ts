import { forkRun, InvalidInput, type OperatorOptions, type StorageOptions, type ValueCodec } from "@durable/core";
import { checkOptions, DurableRun, type OptionTable, runStorage } from "@durable/core/runner";
import type { Flow } from "./flow.js";
import { retargeted } from "./retarget.js";

/** Options of `FlowRunner.fork`. */
export interface ForkFlowOptions<S> {
  /** The run's step whose history the fork keeps; the fork goes on from there. */
  readonly fromStep: number;
  /** The fork's run id (default `newRunId()`); a taken one is `CheckpointConflict`. */
  readonly runId?: string;
  /**
   * The fork's state at `fromStep`, validated with the flow's schema as a
   * flow validates its state; or a function of the state stored there.
   * Default: that state.
   */
  readonly state?: S | ((state: S) => S | Promise<S>);
  /** Who forks (1 to 200 characters), recorded with the fork. */
  readonly by: string;
  /** Why, recorded with the fork. */
  readonly reason?: string;
}

const FORK_FLOW_OPTIONS: OptionTable<ForkFlowOptions<unknown>> = {
  fromStep: true,
  runId: "string",
  state: true,
  by: true,
  reason: true,
};

/**
 * Forks run `runId` of `flow` from step `fromStep` (`forkRun`) on `flow`'s
 * code: the fork's graph digest is the flow's, and its state `options.state`
 * when given. A run of another flow is `InvalidInput`. Returns the fork's run id.
 */
export async function forkFlowRun<S>(
  flow: Flow<S>,
  runId: string,
  options: ForkFlowOptions<S>,
  storage: StorageOptions,
  codec: ValueCodec,
): Promise<string> {
  const where = "FlowRunner.fork";
  checkOptions(where, options, FORK_FLOW_OPTIONS);
  const { store, sealer } = runStorage(where, storage);
  const latest = await DurableRun.latest(store, sealer, runId);
  if (latest.kind !== "flow" || latest.name !== flow.name)
    throw new InvalidInput(
      `${where}: run ${JSON.stringify(runId)} is a run of ${latest.kind} ${JSON.stringify(latest.name)}, not of flow ${JSON.stringify(flow.name)}.`,
    );
  const { fromStep, state, by, reason } = options;
  // A store that never leaves this process needs no key (`sealerFor`): the runner's options are an operator's as they are.
  const operator = { ...storage, by } as OperatorOptions;
  const forked = await forkRun(runId, {
    ...operator,
    fromStep,
    ...(options.runId === undefined ? {} : { runId: options.runId }),
    ...(reason === undefined ? {} : { reason }),
    // The fork goes on with the code it is forked with: its graph, its schema, its version.
    version: flow.version ?? null,
    program: (program) => retargeted(flow, codec, runId, program, { state }),
  });
  return forked.runId;
}
