/**
 * A worker process for the multi-process tests.
 *   worker.ts crash <db> <sideEffects> <runId>   runs the tickets flow; prints "inside email_tickets" and waits there
 *   worker.ts serve <db> <sideEffects>           answers stdin commands, one result line each:
 *     recover <runId> [rerun]   recovers the run
 *     race <runId>              recovers the run, but holds its claim until "go <runId>": it prints
 *                               "at-claim <runId>" once it has read the latest checkpoint, so a test
 *                               can release every worker's claim of the same step at once
 */
import { createInterface } from "node:readline";
import { CheckpointConflict, Executor, RecoveryNeedsDecision, type CheckpointRow } from "@durable/core";
import { FlowRunner } from "@durable/flow";
import { SQLiteCheckpointStore } from "../src/index.js";
import { KEY, runner, tickets, ticketsRegistry } from "./tickets.js";

const [mode, db, sideEffects, runId] = process.argv.slice(2) as [string, string, string, string];

/** Holds the next save (a recovery's claim) until the test says go. */
class ClaimBarrier extends SQLiteCheckpointStore {
  hold: (() => Promise<void>) | undefined;
  override async save(id: string, step: number, row: CheckpointRow): Promise<void> {
    const hold = this.hold;
    this.hold = undefined;
    if (hold !== undefined) await hold();
    return super.save(id, step, row);
  }
}

if (mode === "crash") {
  const registry = ticketsRegistry(sideEffects, { tool: "email_tickets", onEnter: () => console.log("inside email_tickets") });
  await runner(db, registry).run(tickets, { show: "Hamlet", seats: 2 }, { runId });
} else {
  const store = new ClaimBarrier(db);
  const worker = new FlowRunner(new Executor(ticketsRegistry(sideEffects)), { checkpoints: store, checkpointKey: KEY });
  const go = new Map<string, () => void>();
  console.log("ready");
  for await (const line of createInterface({ input: process.stdin })) {
    const [command, id, rerun] = line.split(" ") as [string, string, string | undefined];
    if (command === "go") go.get(id)?.();
    if (command !== "recover" && command !== "race") continue;
    if (command === "race") {
      store.hold = () => {
        console.log(`at-claim ${id}`);
        return new Promise((resolve) => go.set(id, resolve));
      };
    }
    void worker.recover(tickets, id, { rerunInDoubt: rerun === "rerun" }).then(
      (result) => console.log(`won ${id} ${result.status}`),
      (error: unknown) => {
        if (error instanceof CheckpointConflict) console.log(`conflict ${id}`);
        else if (error instanceof RecoveryNeedsDecision) console.log(`in-doubt ${id} ${error.calls.map(([tool]) => tool).join(",")}`);
        else console.log(`error ${id} ${String(error)}`);
      },
    );
  }
}
