import type { CheckpointStore, MemoryCheckpointStore } from "@durable/core";
import { ToolRegistry } from "@durable/core";
import { type CrashPoint, DyingStore } from "@durable/test-utils/stores";
import { until } from "@durable/test-utils/waiting";
import { runnerOn } from "./helpers.js";

// What the patch tests share: tools that count their effects, a worker that dies at a crash point, and the answers
// a run's log holds.

/** A registry of tools that each push their name to `effects` and return it. */
export function toolsOf(names: readonly string[]) {
  const effects: string[] = [];
  const registry = names.reduce(
    (tools, name) =>
      tools.tool(name, () => {
        effects.push(name);
        return name;
      }),
    new ToolRegistry(),
  );
  const ran = (name: string) => effects.filter((effect) => effect === name).length;
  return { effects, registry, ran };
}

/** Runs (or recovers) `runId` through a worker that dies at `crash`; resolves once it died or the drive ended. */
export async function dies(
  store: MemoryCheckpointStore,
  registry: ToolRegistry,
  crash: CrashPoint,
  drive: (runner: ReturnType<typeof runnerOn>) => Promise<unknown>,
): Promise<"died" | "ended"> {
  const through = new DyingStore(store, crash);
  let ended = false;
  void drive(runnerOn(through, registry)).then(
    () => (ended = true),
    () => (ended = true),
  );
  await until(() => through.dead || ended);
  return through.dead ? "died" : "ended";
}

export const beforeStarted = (tool: string): CrashPoint => ({
  op: "recordCall",
  kind: "started",
  tool,
  when: "before",
});

/** The answers the run's log holds for its patches, by patch id, read past the seal. */
export async function patchAnswers(store: CheckpointStore, runId: string): Promise<Record<string, boolean>> {
  const answers: Record<string, boolean> = {};
  for (const row of await store.calls(runId)) {
    const body = JSON.parse(row.sealed.slice(row.sealed.indexOf(".", 3) + 1));
    if (body.tool === "durable:patch") answers[body.args.id] = body.result;
  }
  return answers;
}
