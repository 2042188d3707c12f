import { describe, expect, it } from "vitest";
import {
  type CheckpointStore,
  type DurableEvent,
  MemoryCheckpointStore,
  ToolFailed,
  ToolRegistry,
} from "@durable/core";
import { MAX_ERROR_TEXT, readCallLog, sealerFor } from "@durable/core/runner";
import { DyingStore, settle } from "@durable/test-utils/stores";
import { recoverToolLoop, runToolLoop, type LoopModel, type Message, type ModelReply } from "../src/index.js";

const KEY = "tool-errors-key-0123456789abcdef-xyz";
const ask: Message[] = [{ role: "user", content: "book two seats" }];

/** Asks for `book` once, then answers with what the tool said; keeps every history it was shown. */
function bookingModel() {
  const seen: Array<readonly Message[]> = [];
  const model: LoopModel = {
    async reply(messages): Promise<ModelReply> {
      seen.push(messages);
      const result = messages.find((m) => m.role === "tool");
      return result === undefined
        ? { text: "", toolCalls: [{ id: "b1", name: "book", args: { seats: 2 } }] }
        : { text: `the tool said: ${result.content}`, toolCalls: [] };
    },
  };
  return { model, seen };
}

/** A `book` tool that throws `thrown`, counting its runs. */
function failing(thrown: () => unknown) {
  const ran = { book: 0 };
  const registry = new ToolRegistry().tool("book", () => {
    ran.book++;
    throw thrown();
  });
  return { ran, registry };
}

const toolMessage = (messages: readonly Message[]) => messages.find((m) => m.role === "tool");

describe("a tool error in the tool loop", () => {
  it("goes back to the model as the tool's result, marked isError, and the loop goes on", async () => {
    const { model, seen } = bookingModel();
    const { ran, registry } = failing(() => new RangeError("only 1 seat left"));
    const events: DurableEvent[] = [];
    const result = await runToolLoop(model, registry, ask, {
      checkpoints: new MemoryCheckpointStore(),
      events: (e) => void events.push(e),
    });
    expect(result).toMatchObject({ status: "done", text: "the tool said: error: RangeError: only 1 seat left" });
    expect(toolMessage(seen[1]!)).toEqual({
      role: "tool",
      toolCallId: "b1",
      name: "book",
      content: "error: RangeError: only 1 seat left",
      isError: true,
    });
    expect(ran.book).toBe(1);
    expect(events.filter((e) => e.type === "call.failed")).toMatchObject([
      { call: { tool: "book" }, error: "RangeError: only 1 seat left" },
    ]);
    expect(events.filter((e) => e.type === "run.failed")).toEqual([]);
  });

  it.each([
    ["after its error record is stored", { op: "recordCall", kind: "error", tool: "book", when: "after" }],
    ["before the tool results are saved", { op: "save", step: 2, when: "before" }],
  ] as const)(
    "is replayed to the model after a worker dies %s: the tool does not run again, nothing is in doubt",
    async (_, crash) => {
      const store = new MemoryCheckpointStore();
      const first = bookingModel();
      const { ran, registry } = failing(() => new Error("the booking system is down"));
      void runToolLoop(first.model, registry, ask, {
        runId: "chat",
        checkpoints: new DyingStore(store, crash),
        checkpointKey: KEY,
      });
      await settle();
      expect(ran.book).toBe(1);
      const records = await readCallLog(store, sealerFor(store, KEY), "chat", []);
      expect(records.map((r) => [r.kind, r.tool])).toEqual([
        ["model", "model"],
        ["started", "book"],
        ["error", "book"],
      ]);

      const second = bookingModel();
      const result = await recoverToolLoop(second.model, registry, "chat", { checkpoints: store, checkpointKey: KEY });
      expect(result).toMatchObject({ status: "done", text: "the tool said: error: Error: the booking system is down" });
      expect(ran.book).toBe(1);
      expect(toolMessage(second.seen[0]!)).toMatchObject({
        content: "error: Error: the booking system is down",
        isError: true,
      });
    },
  );

  it.each([
    ["a string", () => "just a string", "error: just a string"],
    ["undefined", () => undefined, "error: undefined"],
    ["a symbol", () => Symbol("odd"), "error: Symbol(odd)"],
    ["an object with no toString", () => Object.create(null), "error: (a thrown value that cannot be read as text)"],
    [
      "an error whose message getter throws",
      () => {
        const error = new TypeError("hidden");
        Object.defineProperty(error, "message", {
          get() {
            throw new Error("no");
          },
        });
        return error;
      },
      "error: TypeError: (its message could not be read)",
    ],
  ])("thrown as %s still gives the model a text", async (_, thrown, content) => {
    const { model, seen } = bookingModel();
    const { registry } = failing(thrown);
    expect(await runToolLoop(model, registry, ask, { checkpoints: new MemoryCheckpointStore() })).toMatchObject({
      status: "done",
    });
    expect(toolMessage(seen[1]!)).toMatchObject({ content, isError: true });
  });

  it(`with a huge message, gives the model at most ${MAX_ERROR_TEXT} characters of it, and stores no more`, async () => {
    const { model, seen } = bookingModel();
    const { registry } = failing(() => new Error("x".repeat(5_000_000)));
    const store = new MemoryCheckpointStore();
    expect(await runToolLoop(model, registry, ask, { runId: "chat", checkpoints: store })).toMatchObject({
      status: "done",
    });
    const content = toolMessage(seen[1]!)!.content;
    expect(content.length).toBeLessThanOrEqual("error: ".length + MAX_ERROR_TEXT);
    expect(content).toMatch(/^error: Error: x+ … \(\d+ more characters\)$/);
    const stored = (await store.calls("chat")).map((c) => c.sealed.length);
    expect(Math.max(...stored)).toBeLessThan(3 * MAX_ERROR_TEXT);
  });

  it('is its call\'s outcome, recorded whatever toolErrors says: a recovery replays it without running the tool, and the recovering worker\'s toolErrors decides ("fail" fails the run, "model" tells the model)', async () => {
    const options = (store: CheckpointStore, toolErrors: "model" | "fail") => ({
      checkpoints: store,
      checkpointKey: KEY,
      toolErrors,
    });
    const recorded = new MemoryCheckpointStore();
    const first = failing(() => new Error("the booking system is down"));
    void runToolLoop(bookingModel().model, first.registry, ask, {
      ...options(new DyingStore(recorded, { op: "recordCall", kind: "error", tool: "book", when: "after" }), "model"),
      runId: "chat",
    });
    await settle();
    const failed = await recoverToolLoop(bookingModel().model, first.registry, "chat", options(recorded, "fail")).catch(
      (e: unknown) => e,
    );
    expect(failed).toBeInstanceOf(ToolFailed);
    expect(failed).toMatchObject({ tool: "book", error: "Error: the booking system is down", attempts: 1 });
    expect((await recorded.latest("chat")).status).toBe("failed");
    expect(first.ran.book).toBe(1);

    const thrown = new MemoryCheckpointStore();
    const second = failing(() => new Error("card declined"));
    void runToolLoop(bookingModel().model, second.registry, ask, {
      ...options(new DyingStore(thrown, { op: "save", step: 2, when: "before" }), "fail"),
      runId: "chat",
    });
    await settle();
    const replayed = await recoverToolLoop(bookingModel().model, second.registry, "chat", options(thrown, "model"));
    expect(replayed).toMatchObject({ status: "done", text: "the tool said: error: Error: card declined" });
    expect(second.ran.book).toBe(1);
  });

  it('with toolErrors: "fail", fails the run with the tool\'s error, as a flow does', async () => {
    const { model } = bookingModel();
    const { registry } = failing(() => new Error("card declined"));
    const store = new MemoryCheckpointStore();
    await expect(
      runToolLoop(model, registry, ask, { runId: "chat", checkpoints: store, toolErrors: "fail" }),
    ).rejects.toThrow("card declined");
    expect((await store.latest("chat")).status).toBe("failed");
  });
});
