import { hash } from "node:crypto";
import type { CheckpointStore } from "@durable/core";
import { ToolRegistry } from "@durable/core";
import { canonicalJson, DurableRun, openHistory, Sealer } from "@durable/core/runner";
import { type LoopModel, type Message, recoverToolLoop, runToolLoop } from "@durable/loop";
import { round } from "./stats.js";
import { cutAtSave, KEY } from "./workload.js";
import { orDash, textTable } from "./table.js";

/** What one store did on a long tool loop. */
export interface LongFigures {
  readonly store: string;
  readonly steps: number;
  /** Mean ms of a step (a model reply, its one tool call, their checkpoints) over the early steps (10 to 50). */
  readonly earlyStepMs: number;
  /** The same over the last 40 steps. */
  readonly lateStepMs: number;
  /** Bytes the store holds for the run (its checkpoints and call records, sealed), per step. */
  readonly bytesPerStep: number;
  /** What each step adds to the run's data (its canonical JSON): the tool's result, the model's reply, the step's entry. */
  readonly newBytesPerStep: number;
  /**
   * ms to recover a run cut off at step 10, and at its last step (reading
   * what recovery reads, then one last reply): the median of three runs cut
   * off alike (LangGraph's rows: one sample).
   */
  readonly recoverEarlyMs: number;
  readonly recoverLateMs: number;
  /**
   * ms to read the checkpoints a recovery at the last step reads and to parse
   * and hash each, with nothing else: what any recovery that checks what it
   * uses pays, since a loop's history is all its data (our stores only).
   */
  readonly readAloneMs?: number;
}

/** The tool's result each step: about 2 KB, as a page an agent fetched. */
export const PAGE = "lorem ipsum dolor sit amet ".repeat(76);
const EARLY = { from: 10, to: 50 } as const;
const LATE = 40;

const registry = new ToolRegistry().tool("fetch_page", (a: { n: number }) => `${a.n}: ${PAGE}`);

/**
 * A model that asks for one page a step until it made `steps` replies, then
 * answers; it notes when each reply was asked for (a step is the time from
 * one to the next).
 */
function pagingModel(steps: number, asked: number[]): LoopModel {
  return {
    async reply(messages: readonly Message[]) {
      asked.push(performance.now());
      const made = messages.filter((m) => m.role === "assistant").length;
      if (made >= steps) return { text: "Read them all.", toolCalls: [] };
      return { text: "", toolCalls: [{ id: `call-${made}`, name: "fetch_page", args: { n: made } }] };
    },
  };
}

/**
 * Runs a tool loop of `steps` model calls, one ~2 KB tool result each, on a
 * fresh store, and measures the time per step early and late and the bytes
 * the store holds; then cuts two more runs off (at step 10 and at the last)
 * and times their recovery. Constant cost per step is late ≈ early, bytes
 * per step ≈ the step's new content, recovery late ≈ recovery early.
 */
export async function measureLong(
  name: string,
  store: () => Promise<CheckpointStore>,
  steps: number,
): Promise<LongFigures> {
  const options = (checkpoints: CheckpointStore, runId: string) => ({
    runId,
    name: "paging",
    checkpoints,
    checkpointKey: KEY,
    maxSteps: steps + 1,
  });
  const prompt: Message[] = [{ role: "user", content: "Read every page." }];
  const asked: number[] = [];
  const whole = await store();
  await runToolLoop(pagingModel(steps, asked), registry, prompt, options(whole, "long"));
  const stepMs = asked.slice(1).map((at, i) => at - (asked[i] as number));
  const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / Math.max(values.length, 1);
  const bytes = await storedBytes(whole, "long");
  const grown = await dataBytes(whole, "long");
  await whole.close();

  const alone: number[] = [];
  const recover = async (at: number) => {
    const cut = await store();
    // Each step saves twice (the model's reply pinned, then its tool's result): cut at the save after step `at`.
    await runToolLoop(pagingModel(steps, []), registry, prompt, options(cutAtSave(cut, 2 * at + 1), `cut-${at}`)).catch(
      () => undefined,
    );
    if (at === steps - 1) alone.push(await readAlone(cut, `cut-${at}`));
    const started = performance.now();
    // The cut drive's lease is this process's: the recovery takes the run over, as an operator's would.
    await recoverToolLoop(pagingModel(0, []), registry, `cut-${at}`, {
      name: "paging",
      checkpoints: cut,
      checkpointKey: KEY,
      takeOver: true,
    });
    const ms = performance.now() - started;
    await cut.close();
    return ms;
  };
  const recoverEarlyMs = round(await median(() => recover(10)), 1);
  const recoverLateMs = round(await median(() => recover(steps - 1)), 1);
  return {
    store: name,
    steps,
    earlyStepMs: round(mean(stepMs.slice(EARLY.from, EARLY.to)), 2),
    lateStepMs: round(mean(stepMs.slice(-LATE)), 2),
    bytesPerStep: Math.round(bytes / steps),
    newBytesPerStep: Math.round(grown / steps),
    recoverEarlyMs,
    recoverLateMs,
    readAloneMs: round(await median(async () => alone.shift() as number), 1),
  };
}

/** The time to read a run's checkpoints from its latest snapshot on, and to parse and hash each (`readAloneMs`). */
async function readAlone(store: CheckpointStore, runId: string): Promise<number> {
  const { chain } = await DurableRun.latest(store, Sealer.withKeys(KEY), runId);
  const started = performance.now();
  const rows = (await store.history?.(runId, chain?.base ?? 0)) ?? [await store.latest(runId)];
  for (const row of rows) {
    JSON.parse(row.sealed.slice(row.sealed.indexOf(".", row.sealed.indexOf(".") + 1) + 1));
    hash("sha256", row.sealed);
  }
  return performance.now() - started;
}

/** How much the run's data grew from its first step to its last (canonical JSON). */
async function dataBytes(store: CheckpointStore, runId: string): Promise<number> {
  const sealer = Sealer.withKeys(KEY);
  const [first] = openHistory(sealer, runId, (await store.history?.(runId, 0))?.slice(0, 1) ?? []);
  const last = await DurableRun.latest(store, sealer, runId);
  return canonicalJson(last.data).length - (first === undefined ? 0 : canonicalJson(first.data).length);
}

/** The sealed bytes of a run's checkpoints and call records, read back from the store (`history` and `calls`). */
async function storedBytes(store: CheckpointStore, runId: string): Promise<number> {
  const checkpoints = (await store.history?.(runId)) ?? [await store.latest(runId)];
  const calls = await store.calls(runId);
  return [...checkpoints, ...calls].reduce((sum, row) => sum + row.sealed.length, 0);
}

/**
 * The figures as a table, with the ratios the goal is stated in and whether
 * each row meets the targets: late ÷ early ≤ 1.3, bytes a step ≤ 2 × the
 * step's new content + 1 KB, recovery at the last step ≤ 2 × at step 10.
 */
export function longTable(figures: readonly LongFigures[]): string[] {
  return textTable(figures, (f) => f.store, [
    ["steps", (f) => String(f.steps)],
    ["early ms", (f) => f.earlyStepMs.toFixed(2)],
    ["late ms", (f) => f.lateStepMs.toFixed(2)],
    ["late÷early", (f) => (f.lateStepMs / f.earlyStepMs).toFixed(2)],
    ["bytes/step", (f) => String(f.bytesPerStep)],
    ["new bytes/step", (f) => String(f.newBytesPerStep)],
    ["recover@10 ms", (f) => f.recoverEarlyMs.toFixed(1)],
    ["recover@last ms", (f) => f.recoverLateMs.toFixed(1)],
    ["last÷10", (f) => (f.recoverLateMs / f.recoverEarlyMs).toFixed(2)],
    ["read alone ms", (f) => orDash(f.readAloneMs, 1)],
    ["targets", targets],
  ]);
}

/** Which of the three targets a row meets, as three marks (time, bytes, recovery): ✓ or ✗. */
function targets(f: LongFigures): string {
  const met = [
    f.lateStepMs <= 1.3 * f.earlyStepMs,
    f.bytesPerStep <= 2 * f.newBytesPerStep + 1024,
    f.recoverLateMs <= 2 * f.recoverEarlyMs,
  ];
  return met.map((ok) => (ok ? "✓" : "✗")).join("");
}

/** The median of three samples, taken one after another. */
async function median(sample: () => Promise<number>): Promise<number> {
  const samples = [await sample(), await sample(), await sample()].sort((a, b) => a - b);
  return samples[1] as number;
}
