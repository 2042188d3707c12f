import { describe, expect, it } from "vitest";
import {
  type CheckpointStore,
  InvalidInput,
  MemoryCheckpointStore,
  RunAlreadyEnded,
  sendEvent,
  startWorker,
  ToolRegistry,
} from "@durable/core";
import { readCallLog, sealerFor } from "@durable/core/runner";
import { sleep, until } from "@durable/test-utils/waiting";
import {
  type EventToolOptions,
  type LoopModel,
  type Message,
  recoverToolLoop,
  runToolLoop,
  servedToolLoops,
  type ToolCallRequest,
  type ToolSpec,
} from "../src/index.js";

// The loop's event tools: the model waits for an event sent to the run (`sendEvent`), the loop is saved waiting with
// the call pinned, the event (or the timeout) wakes it, and the call's result is the event's payload. Each event is
// taken once: a round that runs again replays its finished waits.

const KEY = "loop-tests-key-0123456789abcdef-xyz";

type Call = Omit<ToolCallRequest, "args"> & { readonly args: unknown };

/** What a scripted model was told: the tools offered, and every tool message of the history at its last call. */
interface Told {
  specs: readonly ToolSpec[];
  tools: Message[];
  calls: number;
}

/** A model whose reply n (0-based, counted by the history's replies) makes the calls `script[n]`, then answers "done". */
function scripted(script: readonly (readonly Call[])[]): { model: LoopModel; told: Told } {
  const told: Told = { specs: [], tools: [], calls: 0 };
  const model: LoopModel = {
    async reply(messages, specs) {
      told.specs = specs;
      told.tools = messages.filter((message) => message.role === "tool");
      told.calls += 1;
      const calls = script[messages.filter((message) => message.role === "assistant").length] ?? [];
      return { text: calls.length === 0 ? "done" : "", toolCalls: calls as ToolCallRequest[] };
    },
  };
  return { model, told };
}

const wait = (id: string, args: unknown, name = "wait_for_event"): Call => ({ id, name, args });
const note = (id: string, n: number): Call => ({ id, name: "note", args: { n } });

const EVENT_TOOLS: Readonly<Record<string, EventToolOptions>> = {
  wait_for_event: { events: ["paid", "shipped"] },
  await_payment: { event: "paid", timeoutMs: 60_000, description: "Waits for the customer's payment." },
};

function setup(eventTools = EVENT_TOOLS) {
  const noted: number[] = [];
  const registry = new ToolRegistry().tool("note", (a: { n: number }) => void noted.push(a.n));
  const store = new MemoryCheckpointStore();
  const options = { checkpoints: store, checkpointKey: KEY, name: "payments", eventTools };
  return { noted, registry, store, options };
}

function send(store: CheckpointStore, runId: string, name: string, payload: unknown, idempotencyKey?: string) {
  const key = idempotencyKey === undefined ? {} : { idempotencyKey };
  return sendEvent({ checkpoints: store, checkpointKey: KEY, runId, name, payload, ...key });
}

async function claimable(store: CheckpointStore, name: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const id of store.listUnfinished(name, { claimable: true })) ids.push(id);
  return ids;
}

/** The tool message that answered call `id`. */
const answerTo = (told: Told, id: string) =>
  told.tools.find((message) => message.role === "tool" && message.toolCallId === id);

describe("the loop's event tools", () => {
  it("the model's wait saves the loop waiting and unclaimable; sendEvent wakes it and the model gets the payload, each call once", async () => {
    const { noted, registry, store, options } = setup();
    const { model, told } = scripted([[note("a", 1)], [wait("w", { event: "paid" })], [note("c", 2)]]);
    const waiting = await runToolLoop(model, registry, [{ role: "user", content: "ship when paid" }], {
      ...options,
      runId: "l",
    });
    expect(waiting).toMatchObject({ status: "asleep", runId: "l", waitsFor: ["paid"] });
    expect(told.specs.map((spec) => spec.name)).toEqual(["note", "wait_for_event", "await_payment"]);
    expect(told.specs[1]?.parameters).toMatchObject({
      properties: { event: { enum: ["paid", "shipped"] } },
      required: ["event"],
    });
    expect(noted).toEqual([1]);
    expect(await store.leaseOf("l")).toMatchObject({ owner: "(waiting)" });
    expect(await claimable(store, "payments")).toEqual([]);
    // Before an event a recovery claims nothing and asks the model nothing.
    expect(await recoverToolLoop(model, registry, "l", options)).toEqual(waiting);
    expect(told.calls).toBe(2);
    // An event of another name leaves it waiting for `paid`, the model not asked again.
    await send(store, "l", "shipped", {}, "ship-1");
    expect(await recoverToolLoop(model, registry, "l", options)).toMatchObject({
      status: "asleep",
      waitsFor: ["paid"],
    });
    expect(told.calls).toBe(2);

    expect(await send(store, "l", "paid", { amount: 5 }, "pay-1")).toMatchObject({ status: "sent", seq: 1 });
    expect(await claimable(store, "payments")).toEqual(["l"]);
    // The webhook's resend is a no-op.
    expect(await send(store, "l", "paid", { amount: 5 }, "pay-1")).toMatchObject({ status: "duplicate" });
    const done = await recoverToolLoop(model, registry, "l", options);
    expect(done).toMatchObject({ status: "done", text: "done" });
    expect(noted).toEqual([1, 2]);
    expect(told.calls).toBe(4);
    expect(answerTo(told, "w")).toMatchObject({ content: '{"amount":5}', result: { amount: 5 } });
    await expect(send(store, "l", "paid", {}, "pay-2")).rejects.toBeInstanceOf(RunAlreadyEnded);
  });

  it("a worker serving the loop takes it up within a poll of the event; a user's own waiting tool needs no event name", async () => {
    const { registry, store, options } = setup();
    const { model, told } = scripted([[wait("p", {}, "await_payment")]]);
    expect(await runToolLoop(model, registry, [], { ...options, runId: "w" })).toMatchObject({
      status: "asleep",
      waitsFor: ["paid"],
    });
    expect(told.specs[2]).toMatchObject({
      name: "await_payment",
      description: "Waits for the customer's payment.",
      parameters: { properties: { timeoutSeconds: { maximum: 60 } } },
    });
    const worker = startWorker({
      serve: [servedToolLoops(model, registry, options)],
      pollMs: 50,
      maxPollMs: 50,
      stopOnSignals: false,
    });
    try {
      await sleep(200);
      expect((await store.latest("w")).status).toBe("running");
      const sent = Date.now();
      await send(store, "w", "paid", "card");
      await until(async () => (await store.latest("w")).status === "done", 5_000);
      expect(Date.now() - sent).toBeLessThan(2_000);
    } finally {
      await worker.stop();
    }
    expect(answerTo(told, "p")).toMatchObject({ content: "card" });
  });

  it("an event sent before the model asks for it is taken at once: the loop never waits", async () => {
    const { registry, store, options } = setup();
    // A conversation: the first turn ends at once, the event comes, and the next turn's wait finds it.
    const { model, told } = scripted([[], [wait("w", { event: "shipped" })]]);
    const first = await runToolLoop(model, registry, [{ role: "user", content: "hi" }], {
      ...options,
      runId: "c",
      conversation: true,
    });
    expect(first).toMatchObject({ status: "awaiting-user" });
    await send(store, "c", "shipped", { tracking: "X1" });
    const second = await runToolLoop(model, registry, [{ role: "user", content: "is it shipped?" }], {
      ...options,
      runId: "c",
    });
    expect(second).toMatchObject({ status: "awaiting-user", text: "done" });
    expect(answerTo(told, "w")).toMatchObject({ content: '{"tracking":"X1"}' });
  });

  it("a wait whose timeout passed tells the model it timed out; the model may ask for a shorter one than the tool's", async () => {
    const { registry, store, options } = setup({ await_payment: { event: "paid", timeoutMs: 300 } });
    const { model, told } = scripted([[wait("p", {}, "await_payment")]]);
    const waiting = (await runToolLoop(model, registry, [], { ...options, runId: "t" })) as { until: number };
    expect(waiting).toMatchObject({ status: "asleep", waitsFor: ["paid"] });
    await sleep(Math.max(0, waiting.until - Date.now()));
    await until(async () => (await claimable(store, "payments")).includes("t"), 5_000);
    expect(await recoverToolLoop(model, registry, "t", options)).toMatchObject({ status: "done" });
    expect(answerTo(told, "p")).toMatchObject({ content: 'timed out after 0.3 s: no "paid" event came' });
    expect(answerTo(told, "p")).not.toHaveProperty("isError");

    // With no event there, a timeout of 0 s times out at once: the loop never waits.
    const now = scripted([[wait("p", { timeoutSeconds: 0 }, "await_payment")]]);
    expect(await runToolLoop(now.model, registry, [], { ...options, runId: "t0" })).toMatchObject({ status: "done" });
    expect(answerTo(now.told, "p")).toMatchObject({ content: 'timed out after 0 s: no "paid" event came' });
  });

  it("a round that runs again replays its finished waits: each takes one event, in the order sent, never a second", async () => {
    const { registry, store, options } = setup();
    // Round 1 waits for both events; round 2 for the next `paid`.
    const { model, told } = scripted([
      [wait("p", { event: "paid" }), wait("s", { event: "shipped" })],
      [wait("q", { event: "paid" })],
    ]);
    expect(await runToolLoop(model, registry, [], { ...options, runId: "r" })).toMatchObject({
      waitsFor: ["paid", "shipped"],
    });
    await send(store, "r", "paid", "first", "pay-1");
    // `paid` is taken and recorded; the round waits on for `shipped` alone.
    expect(await recoverToolLoop(model, registry, "r", options)).toMatchObject({
      status: "asleep",
      waitsFor: ["shipped"],
    });
    await send(store, "r", "paid", "second", "pay-2");
    expect(await send(store, "r", "paid", "first again", "pay-1")).toMatchObject({ status: "duplicate" });
    await send(store, "r", "shipped", "box", "ship-1");
    // The round runs again: the wait for `paid` replays "first" (not "second"), the wait for `shipped` takes "box",
    // and round 2's wait takes "second" at once.
    expect(await recoverToolLoop(model, registry, "r", options)).toMatchObject({ status: "done" });
    expect(["p", "s", "q"].map((id) => answerTo(told, id)?.content)).toEqual(["first", "box", "second"]);
    expect(told.calls).toBe(3);
  });

  it("arguments that are not a wait for an allowed event go back to the model as an error, and it waits for nothing", async () => {
    const { registry, store, options } = setup({
      ...EVENT_TOOLS,
      wait_for_event: { events: ["paid", "shipped"], timeoutMs: 10_000 },
    });
    const bad = [
      [wait("w", { event: "refund" }), /^error: wait_for_event may wait for "paid" or "shipped", not "refund"$/],
      [wait("w", {}), /^error: wait_for_event takes \{ "event": "paid" \| "shipped", "timeoutSeconds"\?/],
      [wait("w", { event: 7 }), /may wait for "paid" or "shipped", not 7/],
      [
        wait("w", { event: "paid", timeoutSeconds: -1 }),
        /^error: timeoutSeconds must be a number of seconds from 0 to 10,/,
      ],
      [wait("w", { event: "paid", timeoutSeconds: 11 }), /from 0 to 10, not 11$/],
      [wait("w", { event: "paid", timeoutSeconds: "ten" }), /not "ten"$/],
      [wait("w", { event: "paid", after: 1 }), /^error: wait_for_event takes/],
      [wait("w", "paid"), /^error: wait_for_event takes/],
      [
        wait("w", { event: "paid" }, "await_payment"),
        /^error: await_payment takes \{ "timeoutSeconds"\?: <seconds from 0 to 60> \}$/,
      ],
    ] as const;
    for (const [index, [call, message]] of bad.entries()) {
      const { model, told } = scripted([[call]]);
      const runId = `bad-${index}`;
      expect(await runToolLoop(model, registry, [], { ...options, runId })).toMatchObject({ status: "done" });
      expect(answerTo(told, "w")).toMatchObject({ isError: true, content: expect.stringMatching(message) });
      // Nothing was recorded for the call: the model's record is all the log holds.
      const records = await readCallLog(store, sealerFor(store, KEY), runId, []);
      expect(records.map((record) => record.kind)).toEqual(["model", "model"]);
    }
  });

  it("event tools that are not declared as they must be are InvalidInput before anything runs", async () => {
    const { registry, store } = setup();
    const { model, told } = scripted([]);
    const { inbox: _inbox, sendEvent: _send, ...plain } = store as unknown as Record<string, unknown>;
    const without = Object.assign(Object.create(Object.getPrototypeOf(store)), plain) as CheckpointStore;
    Object.defineProperties(without, { sendEvent: { value: undefined }, inbox: { value: undefined } });
    const refusals: [unknown, RegExp, CheckpointStore?][] = [
      [{ w: {} }, /eventTools "w" takes one `event`/],
      [{ w: { event: "paid", events: ["paid"] } }, /takes one `event`/],
      [{ w: { events: [] } }, /events must be a non-empty list/],
      [{ w: { events: "paid" } }, /events must be a non-empty list/],
      [{ w: { events: ["paid", ""] } }, /an event's name must be a string of 1 to 128/],
      [{ w: { event: "paid", timeoutMs: 1.5 } }, /timeoutMs must be a whole number of ms/],
      [{ w: { event: "paid", timeoutMs: -1 } }, /timeoutMs must be a whole number of ms/],
      [{ w: { event: "paid", timeout: 5 } }, /unknown option `timeout`; did you mean `timeoutMs`\?/],
      [{ w: "paid" }, /takes an options object/],
      [{ "two words": { event: "paid" } }, /a tool's name must be 1 to 64 letters/],
      [{ note: { event: "paid" } }, /"note" is the name of another tool/],
      [["paid"], /eventTools must be an object/],
      [{ w: { event: "paid" } }, /no events capability/, without],
    ];
    for (const [eventTools, message, checkpoints = store] of refusals) {
      const run = runToolLoop(model, registry, [], { checkpoints, checkpointKey: KEY, eventTools } as never);
      await expect(run).rejects.toBeInstanceOf(InvalidInput);
      await expect(run).rejects.toThrow(message);
    }
    // The sleep tool's name is taken too.
    await expect(
      runToolLoop(model, registry, [], {
        checkpoints: store,
        checkpointKey: KEY,
        sleepTool: "wait",
        eventTools: { wait: { event: "paid" } },
      }),
    ).rejects.toThrow(/eventTools "wait": "wait" is the name of another tool/);
    expect(told.calls).toBe(0);
  });
});
