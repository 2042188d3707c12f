/** Runs two calls and a save through core, for the fault-point tests: prints "finished" unless a fault point killed it. */
import { Executor, MemoryCheckpointStore, ToolRegistry } from "../src/index.js";
import { faultPoint } from "../src/internal.js";
import { CallScope, DurableRun, freshPlan, Sealer } from "../src/runner.js";

const store = new MemoryCheckpointStore();
const { run } = await DurableRun.start({
  store,
  sealer: Sealer.unsigned(),
  runId: "r",
  name: "f",
  kind: "flow",
  identity: {},
  data: {},
});
const registry = new ToolRegistry().tool("effect", (args: { n: number }) => {
  console.log(`effect ${args.n}`);
  faultPoint("tool.inside");
  return args.n;
});
const executor = new Executor(registry);
const scope = new CallScope({ kind: "flow", log: run.log, plan: freshPlan(1), identity: {} });
await executor.call(scope, "a", "effect", { n: 1 });
await executor.call(scope, "b", "effect", { n: 2 });
await run.save("done", {});
console.log("finished");
