/**
 * A worker process for the multi-process tests of every store.
 *   worker.ts <store module> <store arg> crash <sideEffects> <runId>
 *       runs the tickets flow; prints "inside email_tickets" and waits there
 *   worker.ts <store module> <store arg> serve <sideEffects>
 *       answers stdin commands, one result line each:
 *         recover <runId> [rerun]   recovers the run
 *         race <runId>              recovers the run, but holds its claim until "go <runId>": it prints
 *                                   "at-claim <runId>" once it has read the latest checkpoint, so a test
 *                                   can release every worker's claim of the same step at once
 * The store module's default export opens the store: (arg: string) => CheckpointStore.
 */
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";
import { CheckpointConflict, RecoveryNeedsDecision, type CheckpointRow, type CheckpointStore } from "@durable/core";
import { runner, tickets, ticketsRegistry } from "./tickets.js";

const [storeModule, storeArg, mode, sideEffects, runId] = process.argv.slice(2) as [string, string, string, string, string];
const open = ((await import(pathToFileURL(resolve(storeModule)).href)) as { default: (arg: string) => CheckpointStore }).default;

/** Holds the next save (a recovery's claim) until the test says go. */
function withClaimBarrier(store: CheckpointStore): CheckpointStore & { hold?: () => Promise<void> } {
  const wrapped: CheckpointStore & { hold?: () => Promise<void> } = {
    async save(id: string, step: number, row: CheckpointRow) {
      const hold = wrapped.hold;
      delete wrapped.hold;
      if (hold !== undefined) await hold();
      return store.save(id, step, row);
    },
    latest: (id) => store.latest(id),
    listUnfinished: (flow) => store.listUnfinished(flow),
    delete: (id) => store.delete(id),
    recordCall: (id, segment, seq, sealed) => store.recordCall(id, segment, seq, sealed),
    calls: (id) => store.calls(id),
    close: () => store.close(),
  };
  return wrapped;
}

if (mode === "crash") {
  const registry = ticketsRegistry(sideEffects, { tool: "email_tickets", onEnter: () => console.log("inside email_tickets") });
  await runner(open(storeArg), registry).run(tickets, { show: "Hamlet", seats: 2 }, { runId });
} else {
  const store = withClaimBarrier(open(storeArg));
  const worker = runner(store, ticketsRegistry(sideEffects));
  const go = new Map<string, () => void>();
  console.log("ready");
  for await (const line of createInterface({ input: process.stdin })) {
    const [command, id, rerun] = line.split(" ") as [string, string, string | undefined];
    if (command === "go") go.get(id)?.();
    if (command !== "recover" && command !== "race") continue;
    if (command === "race") {
      store.hold = () => {
        console.log(`at-claim ${id}`);
        return new Promise((done) => go.set(id, done));
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
  await store.close();
}
