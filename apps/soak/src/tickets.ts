import { type CheckpointStore, Executor, idempotencyKey, ToolRegistry } from "@durable/core";
import { FlowRunner } from "@durable/flow";
import { checkoutFlow } from "@durable-apps/shared/tickets";
import { LedgerWriter } from "./ledger.js";
import { KEY } from "./store.js";

/**
 * The soak's flow: hold the seats, then charge and email in one node, so kills inside the email find the
 * charge's result stored and recovery replays it. Every worker serves it, so any may go on with any run.
 */
const SOAK_FLOW: SoakFlow = checkoutFlow("soak");

type SoakFlow = ReturnType<typeof checkoutFlow>;

/** A version of the soak's flow (the versions soak): 1, the soak's flow; 2, the same with a receipt mailed last. */
export type SoakVersion = 1 | 2;

const VERSIONS = {
  1: checkoutFlow("soak", { version: 1 }),
  2: checkoutFlow("soak", { version: 2, receipt: true }),
} as const;

/** The soak's flow of a version (the versions soak), or the one that names none. */
export function soakFlow(version?: SoakVersion): SoakFlow {
  return version === undefined ? SOAK_FLOW : VERSIONS[version];
}

/** The tool of the node version 2 adds. */
export const RECEIPT_TOOL = "send_receipt";

/** The tools a run of a version calls, once each. */
export function toolsOf(version?: SoakVersion): readonly string[] {
  const tools = ["hold_seats", "charge_card", "email_tickets"];
  return version === 2 ? [...tools, RECEIPT_TOOL] : tools;
}

/** Tools whose second execution would be a second effect: each one past the first must have been reported in doubt. */
export const NON_IDEMPOTENT: ReadonlySet<string> = new Set(["charge_card", "email_tickets", RECEIPT_TOOL]);

/**
 * Tools that write each execution, its worker, its times and its idempotency
 * key to the ledger. `toolMs`: how long each takes (default a random 0–4 ms).
 * `hearSignal`: each stops at once when its run is given up (a stopping
 * worker's deadline), as a well-behaved tool does, so its end is written
 * before the run's lease is released: the queue soak counts who is inside a tool.
 */
export function soakTools(ledger: LedgerWriter, toolMs?: number, hearSignal = false): ToolRegistry {
  const tool =
    (name: string) => async (_args: unknown, ctx: { runId: string; callId: string; signal: AbortSignal }) => {
      const write = ledger.execution(ctx.runId, ctx.callId, name, idempotencyKey());
      let over = false;
      const ended = (): void => {
        if (!over) write();
        over = true;
      };
      // A wait inside the tool, so kills land inside tools, and between a tool's effect and its stored result.
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, toolMs ?? Math.random() * 4);
        if (!hearSignal) return;
        ctx.signal.addEventListener(
          "abort",
          () => {
            clearTimeout(timer);
            ended();
            reject(ctx.signal.reason);
          },
          { once: true },
        );
      });
      ended();
      return `${name} done`;
    };
  return new ToolRegistry()
    .tool("hold_seats", tool("hold_seats"), { idempotent: true })
    .tool("charge_card", tool("charge_card"))
    .tool("email_tickets", tool("email_tickets"))
    .tool(RECEIPT_TOOL, tool(RECEIPT_TOOL));
}

/**
 * A runner that only starts runs (`runner.start`, for the workers to take): it checks its flows' tools are
 * registered, and runs none, so its ledger is nowhere.
 */
export function startingRunner(store: CheckpointStore): FlowRunner {
  const tools = soakTools(new LedgerWriter("/dev/null", "starter"));
  return new FlowRunner(new Executor(tools), { checkpoints: store, checkpointKey: KEY });
}

export function order(k: number): { show: string; seats: number } {
  return { show: `show-${k % 7}`, seats: 1 + (k % 4) };
}

export const runIdOf = (k: number): string => `soak-${k}`;

/** The k of run `soak-<k>`. */
export const indexOfRun = (runId: string): number => Number(runId.slice("soak-".length));
