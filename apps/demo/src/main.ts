/**
 * What @durable core does, in one process on the memory store: tool calls go
 * through a signed call log; a second worker that takes over the run replays
 * finished calls from the log, and stops at a call in doubt until told to rerun it.
 */
import {
  CallScope,
  DurableRun,
  Executor,
  RecoveryNeedsDecision,
  ToolRegistry,
  freshPlan,
  idempotencyKey,
  planReplay,
  sealerFor,
  type CheckpointStore,
} from "@durable/core";
import { MemoryCheckpointStore } from "@durable/store-memory";

const KEY = process.env["DURABLE_KEY"] ?? "demo-key-use-a-secret-of-32-bytes!";
const ran = { charge_card: 0, email_tickets: 0 };
let crashInsideEmail = true;

const registry = new ToolRegistry()
  .tool("charge_card", (args: { seats: number }) => {
    ran.charge_card += 1;
    return { charged: args.seats * 40, key: idempotencyKey().slice(0, 12) };
  })
  .tool("email_tickets", (args: { show: string }) => {
    ran.email_tickets += 1;
    if (crashInsideEmail) throw new Error("worker 1 died inside email_tickets");
    return { sent: `tickets for ${args.show}` };
  });

const executor = new Executor(registry);
const say = (who: string, what: string) => console.log(`${who.padEnd(9)}| ${what}`);

/** One round of the run: charge, then email. */
async function round(run: DurableRun, scope: CallScope) {
  const charge = await executor.call(scope, "pay:0", "charge_card", { seats: 2 });
  say(`worker ${run.segment + 1}`, `charge_card -> ${JSON.stringify(charge)}`);
  const email = await executor.call(scope, "send:0", "email_tickets", { show: "Hamlet" });
  say(`worker ${run.segment + 1}`, `email_tickets -> ${JSON.stringify(email)}`);
}

async function main(store: CheckpointStore) {
  const sealer = sealerFor(store, KEY);
  const { run } = await DurableRun.start({
    store, sealer, runId: "order-7", flow: "tickets", kind: "flow", identity: { user: "ada" }, data: { show: "Hamlet" },
  });
  say("worker 1", "saved step 0 of run order-7");
  try {
    await round(run, new CallScope({ kind: "flow", log: run.log, plan: freshPlan(1), identity: run.identity }));
  } catch (error) {
    say("worker 1", `crashed: ${(error as Error).message}`);
  }

  for (const rerunInDoubt of [false, true]) {
    const latest = await DurableRun.latest(store, sealer, "order-7");
    const { run: second, records } = await DurableRun.claim(store, sealer, latest);
    say(`worker ${second.segment + 1}`, `claimed step ${second.step} with segment ${second.segment}; the log holds ${records.length} records`);
    try {
      const plan = planReplay("order-7", records, 1, registry, { rerunInDoubt });
      crashInsideEmail = false;
      const scope = new CallScope({ kind: "flow", log: second.log, plan, identity: second.identity });
      await round(second, scope);
      await second.save("done", { show: "Hamlet" });
      say(`worker ${second.segment + 1}`, `replayed: ${scope.replayed.map((c) => c.tool).join(", ")}; reran: ${scope.rerun.map((c) => c.tool).join(", ")}`);
    } catch (error) {
      if (!(error instanceof RecoveryNeedsDecision)) throw error;
      say(`worker ${second.segment + 1}`, `in doubt: ${error.calls.map(([tool, why]) => `${tool} (${why})`).join(", ")}`);
      say(`worker ${second.segment + 1}`, "we checked: no mail went out, so it may run again");
    }
  }
  say("result", `charge_card ran ${ran.charge_card} time(s); email_tickets ran ${ran.email_tickets} time(s)`);
}

await main(new MemoryCheckpointStore());
