import type {
  CheckpointStore,
  ApprovalAnswers,
  Executor,
  Identity,
  PausedResult,
  RecoverOptions,
  RunHandleOptions,
  ScheduleOptions,
  ValueCodec,
} from "@durable/core";
import { InvalidInput, migrateRun, newRunId, type OperatorOptions, RunHandle, Schedule } from "@durable/core";
import { retargeted, type NewState } from "./retarget.js";
import type { AsleepResult } from "@durable/core/runner";
import { FlowError } from "./flow-error.js";
import {
  checkExecutor,
  checkOptions,
  checkRunnerOptions,
  decodeValue,
  driverOptions,
  PLAIN_JSON,
  queuePlace,
  type QueueStart,
  RECOVER_EACH_OPTIONS,
  RECOVER_OPTIONS,
  RUNNER_OPTIONS,
  RunDriver,
  type RunnerOptions,
  type OptionTable,
  type Recovered,
  type RecoverEachOptions,
  type JsonObject,
} from "@durable/core/runner";
import type { DriverOptions, RunProgram, StepContext, StepOutcome } from "@durable/core/runner";
import { Flow } from "./flow.js";
import { type ForkFlowOptions, forkFlowRun } from "./fork.js";
import { flowDataJson, readFlowData, type FlowData } from "./flow-data.js";
import { checkStoredState, settleState, storedState } from "./schema.js";
import { runSuperstep } from "./superstep.js";
import type { ChildRuns } from "./children.js";
import { Workflow } from "./workflow.js";

/** A flow run that is done: its final state. */
export interface FlowDone<S> {
  readonly status: "done";
  readonly runId: string;
  readonly step: number;
  readonly state: S;
}

/** Where a run stands when `run`, `recover` or `resume` returns. */
export type FlowResult<S> = FlowDone<S> | PausedResult | AsleepResult;

/** Options of `FlowRunner`. */
export interface FlowRunnerOptions extends RunnerOptions {
  /**
   * How tool results and states that are not plain JSON (a `Date`, a `Map`, a `BigInt`) are stored,
   * e.g. superjson's `serialize`/`deserialize`; the same on every worker. Default: they must be plain JSON.
   */
  readonly codec?: ValueCodec;
}

/** Options of `run`. */
export interface RunOptions {
  /** Default: `newRunId()`. */
  readonly runId?: string;
  /** The end user, thread and principal the run acts for; sealed into every checkpoint. */
  readonly ctx?: Identity;
}

/** Options of `start`. */
export interface StartOptions extends RunOptions, QueueStart {
  /**
   * What a run id that exists already gives: its handle when it is a run of
   * this flow (`"handle"`, the default: a retried start starts nothing new),
   * or `CheckpointConflict` always (`"error"`).
   */
  readonly ifExists?: "handle" | "error";
}

/** Options of `cancel`. */
export interface CancelOptions {
  /** Must name the run's own identity. */
  readonly ctx?: Identity;
}

const FLOW_RUNNER_OPTIONS: OptionTable<FlowRunnerOptions> = RUNNER_OPTIONS;
const RUN_OPTIONS: OptionTable<RunOptions> = { runId: "string", ctx: true };
const START_OPTIONS: OptionTable<StartOptions> = {
  ...RUN_OPTIONS,
  ifExists: "string",
  queue: "object",
  priority: true,
  concurrencyKey: true,
};
const CANCEL_OPTIONS: OptionTable<CancelOptions> = { ctx: true };

/** Options of `migrate`: who decides (recorded), why, and the state the run goes on with on the new code. */
export interface MigrateOptions<S = unknown> extends NewState<S> {
  /** Who moves the run (1 to 200 characters), recorded with the migration. */
  readonly by: string;
  readonly reason?: string;
  /** The step the operator saw: refused (`CheckpointConflict`) when the run moved on since. */
  readonly expectStep?: number;
}

const MIGRATE_OPTIONS: OptionTable<MigrateOptions> = { by: true, reason: true, expectStep: true, state: true };

/**
 * Runs flows durably: a sealed checkpoint after every superstep, every tool
 * call through the call log, recovery from the last checkpoint on any worker.
 * Each flow is a program on core's `RunDriver`: one step is one superstep.
 */
export class FlowRunner {
  readonly executor: Executor;
  readonly store: CheckpointStore;
  readonly #driverOptions: DriverOptions;
  readonly #codec: ValueCodec;
  /** What a handle reads its runs with: this runner's storage options. */
  readonly #storage: RunHandleOptions;

  constructor(executor: Executor, options: FlowRunnerOptions) {
    checkExecutor("FlowRunner", executor);
    checkRunnerOptions("FlowRunner", options, FLOW_RUNNER_OPTIONS);
    this.executor = executor;
    this.store = options.checkpoints;
    this.#codec = options.codec ?? PLAIN_JSON;
    const { checkpoints, checkpointKey, encryptionKey, anchor } = options;
    this.#storage = { checkpoints, checkpointKey, encryptionKey, anchor };
    this.#driverOptions = { ...driverOptions("FlowRunner", options), codec: this.#codec };
  }

  /** Starts a run from `input` (validated with the flow's schema) and runs it until it is done or paused. */
  async run<S>(flow: Flow<S>, input: unknown, options: RunOptions = {}): Promise<FlowResult<S>> {
    checkOptions("FlowRunner.run", options, RUN_OPTIONS);
    return this.#start(flow, this.#driver(flow), input, options);
  }

  /**
   * Starts a run from `input` (validated with the flow's schema) without
   * driving it: saves it queued and returns its handle at once; a worker
   * serving the flow (`startWorker({ serve: [runner.served(flow)] })`) claims
   * it. A run id that exists already gives that run's handle when it is a run
   * of this flow (see `ifExists`), else `CheckpointConflict`.
   */
  async start<S>(flow: Flow<S>, input: unknown, options: StartOptions = {}): Promise<RunHandle<S>> {
    checkOptions("FlowRunner.start", options, START_OPTIONS);
    const { ifExists, ctx } = options;
    if (ifExists !== undefined && ifExists !== "handle" && ifExists !== "error")
      throw new InvalidInput(
        `FlowRunner.start: ifExists must be "handle" or "error", not ${JSON.stringify(ifExists)}.`,
      );
    const queue = queuePlace("FlowRunner.start", options);
    const runId = options.runId ?? newRunId();
    const driver = this.#driver(flow);
    const data = await this.#firstData(flow, input, `The input of flow ${flow.name}`);
    await driver.submit(data, { runId, ctx, ifExists, queue });
    return this.handle(flow, runId);
  }

  /** A handle on a run of the flow (`RunHandle`): its status, its final state once done, its cancel. */
  handle<S>(flow: Flow<S>, runId: string): RunHandle<S> {
    this.#program(flow);
    // The run's final state as stored, decoded: a run of another version of the flow (started before a deployment)
    // is read as well, with no graph or schema of this code's asked of it.
    const state = (stored: JsonObject, id: string) =>
      decodeValue(this.#codec, readFlowData(id, stored).state, `the state of run ${id}`) as S;
    return new RunHandle(this.#storage, runId, async (stored, { runId: id }) => state(stored, id));
  }

  /**
   * A schedule of the flow: one run per tick across the fleet, its input
   * from `options.start(tick)`, its id `<name>@<tick>` (one worker's step 0
   * wins). Serve it with `startWorker({ schedules: [schedule] })`, which
   * serves the flow's runs too. Its options are checked now: `InvalidInput`.
   */
  schedule<S>(flow: Flow<S>, options: ScheduleOptions): Schedule {
    const driver = this.#driver(flow);
    return new Schedule(options, { served: driver, start: (input, start) => this.#start(flow, driver, input, start) });
  }

  /**
   * Forks a run of the flow from one of its steps (`forkRun`, see
   * docs/protocol.md, "Forks"): a new run whose history up to `fromStep` is
   * the run's (its finished calls replay), going on with this flow's code
   * (its graph digest is the flow's) and `state` when given. Returns the
   * fork's handle: a worker serving the flow drives it, or `recover(flow, handle.runId)`.
   */
  async fork<S>(flow: Flow<S>, runId: string, options: ForkFlowOptions<S>): Promise<RunHandle<S>> {
    return this.handle(flow, await forkFlowRun(flow, runId, options, this.#storage, this.#codec));
  }

  /**
   * Goes on with a run from its last checkpoint: claims it (one worker wins),
   * replays finished calls, and fails closed on calls in doubt. A paused run
   * comes back as its paused result.
   */
  async recover<S>(flow: Flow<S>, runId: string, options: RecoverOptions = {}): Promise<FlowResult<S>> {
    checkOptions("FlowRunner.recover", options, RECOVER_OPTIONS);
    return this.#driver(flow).recover(runId, options);
  }

  /**
   * Goes on with a failed run from its last checkpoint: the calls its tools'
   * errors ended run again (their attempts start over), finished calls replay.
   * `CheckpointConflict` for a run that did not fail, or was cancelled.
   */
  async retry<S>(flow: Flow<S>, runId: string, options: RecoverOptions = {}): Promise<FlowResult<S>> {
    checkOptions("FlowRunner.retry", options, RECOVER_OPTIONS);
    return this.#driver(flow).retry(runId, options);
  }

  /**
   * Cancels a run that has not ended, even one another worker drives (it is
   * fenced at its next write): saved `failed` with `Cancelled: <reason>`, and
   * no retry goes on from it. Returns the step it was saved as.
   */
  async cancel<S>(flow: Flow<S>, runId: string, reason: string, options: CancelOptions = {}): Promise<number> {
    checkOptions("FlowRunner.cancel", options, CANCEL_OPTIONS);
    return this.#driver(flow).cancel(runId, reason, options);
  }

  /**
   * Moves a run that has not ended onto `flow`, a version of its flow's code
   * (`flow.version`): an operator's decision, recorded with `by`, when and
   * why. Its nodes must be `flow`'s; it goes on with `state` (checked by
   * `flow`'s schema) or its own state (which must still parse); the graph
   * check passes for `flow` from then on. A worker serving that version goes
   * on with it. Returns the step saved (see core's `migrateRun`).
   */
  async migrate<S>(flow: Flow<S>, runId: string, options: MigrateOptions<S>): Promise<number> {
    checkOptions("FlowRunner.migrate", options, MIGRATE_OPTIONS);
    const to = flow.version;
    if (to === undefined)
      throw new InvalidInput(
        `FlowRunner.migrate: flow ${JSON.stringify(flow.name)} names no version to move the run to.`,
      );
    const { state, reason, ...operator } = options;
    const migration = {
      to,
      reason,
      of: { kind: "flow" as const, name: flow.name },
      program: (stored: JsonObject) => retargeted(flow, this.#codec, runId, stored, { state }),
    };
    return migrateRun(runId, migration, { ...this.#storage, ...operator, codec: this.#codec } as OperatorOptions);
  }

  /**
   * Recovers the flow's claimable runs (never one whose lease another worker
   * holds), `concurrency` at once (default 8), yielding each outcome as it
   * settles; memory stays flat however many runs there are.
   */
  recoverEach<S>(flow: Flow<S>, options: RecoverEachOptions = {}): AsyncGenerator<Recovered<FlowDone<S>>> {
    checkOptions("FlowRunner.recoverEach", options, RECOVER_EACH_OPTIONS);
    return this.#driver(flow).recoverEach(options);
  }

  /** `recoverEach`, collected: each claimable run's id mapped to its result or to the error that stopped it. */
  async recoverAll<S>(flow: Flow<S>, options: RecoverEachOptions = {}): Promise<Map<string, FlowResult<S> | Error>> {
    checkOptions("FlowRunner.recoverAll", options, RECOVER_EACH_OPTIONS);
    return this.#driver(flow).recoverAll(options);
  }

  /** The flow's runs as a `Worker` serves them: its driver. */
  served<S>(flow: Flow<S>): RunDriver<FlowData<S>, FlowDone<S>> {
    return this.#driver(flow);
  }

  /**
   * Resumes a paused run with answers to its pending approvals. The
   * answers are stored with the next checkpoint before any is spent, so one
   * resume wins: a second one of the same pause is `CheckpointConflict`.
   */
  async resume<S>(
    flow: Flow<S>,
    runId: string,
    answers: ApprovalAnswers,
    options: RecoverOptions = {},
  ): Promise<FlowResult<S>> {
    checkOptions("FlowRunner.resume", options, RECOVER_OPTIONS);
    const driver = this.#driver(flow);
    return driver.resume(await driver.open(runId, options.ctx), answers, options);
  }

  /** Starts a run of the flow from `input`, validated with its schema, and drives it until it is done, paused or asleep. */
  async #start<S>(
    flow: Flow<S>,
    driver: RunDriver<FlowData<S>, FlowDone<S>>,
    input: unknown,
    options: RunOptions & { readonly signal?: AbortSignal },
  ): Promise<FlowResult<S>> {
    return driver.start(await this.#firstData(flow, input, `The input of flow ${flow.name}`), options);
  }

  /** What step 0 of a run of the flow holds: its state from `input`, validated with its schema (`what` names it in errors). */
  async #firstData<S>(flow: Flow<S>, input: unknown, what: string): Promise<FlowData<S>> {
    const state = await settleState(flow.schema, this.#codec, flow.initialState(input), what);
    return { state, frontier: [flow.graph.entry], visits: {}, waiting: {}, digest: flow.digest };
  }

  /** The driver of one flow. */
  #driver<S>(flow: Flow<S>): RunDriver<FlowData<S>, FlowDone<S>> {
    return new RunDriver(this.#program(flow), this.#driverOptions);
  }

  /** One flow as a program; a node calling a tool that is not registered is `FlowError` before anything is read or written. */
  #program<S>(flow: Flow<S>): RunProgram<FlowData<S>, FlowDone<S>> {
    for (const node of flow.graph.nodes.values()) {
      const tool = (node.body as { tool?: unknown }).tool;
      if (typeof tool === "string" && !this.executor.registry.has(tool)) {
        throw new FlowError(
          `Node ${JSON.stringify(node.name)} of flow ${JSON.stringify(flow.name)} calls ${JSON.stringify(tool)}, which is not registered.`,
        );
      }
    }
    return flowProgram(flow, this.executor, this.#codec, this.#children);
  }

  /** How this runner's nodes start child runs: each on its own flow's driver, with this runner's codec. */
  readonly #children: ChildRuns = {
    prepare: async (child, input) => {
      if (!(child instanceof Flow))
        throw new FlowError("startChild takes a Flow or a workflow, and the child's input.");
      const data = await this.#firstData(child, input, `The input of child flow ${child.name}`);
      const driver = this.#driver(child);
      return {
        name: child.name,
        input: storedState(this.#codec, data.state),
        enqueue: (runId, parent) => driver.enqueue(data, { runId, parent }),
        retell: (runId) => driver.retellEnd(runId),
      };
    },
    output: (child, output) => {
      const state = decodeValue(this.#codec, output, `the state of a child run of ${child.name}`);
      return child instanceof Workflow ? (state as { output?: unknown }).output : state;
    },
  };
}

/** A flow as a program on the driver; its state is stored as `codec` encodes it. */
function flowProgram<S>(
  flow: Flow<S>,
  executor: Executor,
  codec: ValueCodec,
  children: ChildRuns,
): RunProgram<FlowData<S>, FlowDone<S>> {
  return {
    kind: "flow",
    name: flow.name,
    version: flow.version,
    registry: executor.registry,

    async read(runId: string, stored: JsonObject): Promise<FlowData<S>> {
      const data = readFlowData(runId, stored);
      if (data.digest !== flow.digest) {
        throw new FlowError(
          `The graph of flow ${JSON.stringify(flow.name)} changed since run ${JSON.stringify(runId)} was saved; finish it with the graph it started with.`,
        );
      }
      // Checked against the schema, never transformed again.
      const state = await checkStoredState(flow.schema, codec, data.state, `The stored state of run ${runId}`);
      return { ...data, state };
    },

    write: (data) => flowDataJson(data, storedState(codec, data.state)),

    // A child flow gives its parent its final state, as stored.
    output: (data) => storedState(codec, data.state),

    async step(data: FlowData<S>, { runId, round, scope }: StepContext): Promise<StepOutcome<FlowData<S>>> {
      const outcome = await runSuperstep(flow, executor, scope, data, children);
      if (outcome.stop === "pause") return { next: "pause" };
      if (outcome.stop === "sleep") return { next: "sleep", until: outcome.until };
      const what = `The state after superstep ${round} of run ${runId}`;
      const state = await settleState(flow.schema, codec, outcome.state, what);
      const { frontier, visits, waiting } = outcome;
      return {
        next: frontier.length === 0 ? "done" : "step",
        data: { state, frontier, visits, waiting, digest: data.digest },
        roundOver: true,
      };
    },

    result: (data, { runId, step }) => ({ status: "done", runId, step, state: data.state }),

    saved: () => ({ name: flow.name }),
  };
}
