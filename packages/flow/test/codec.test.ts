import {
  decideInDoubt,
  Executor,
  InvalidInput,
  MemoryCheckpointStore,
  RecoveryNeedsDecision,
  ToolRegistry,
  UnrecordableResult,
  type ValueCodec,
} from "@durable/core";
import { readCallLog, Sealer } from "@durable/core/runner";
import superjson, { type SuperJSONResult } from "superjson";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow, FlowRunner } from "../src/index.js";
import { DyingStore, KEY, settle, type CrashPoint } from "./helpers.js";

const codec: ValueCodec = {
  encode: (value) => superjson.serialize(value),
  decode: (json) => superjson.deserialize(json as unknown as SuperJSONResult),
};

/** What a booking system returns: a row as an ORM gives it. */
interface Booking {
  readonly at: Date;
  readonly seats: Map<string, number>;
  readonly cents: bigint;
}
const BOOKED: Booking = { at: new Date("2026-12-04T10:00:00.000Z"), seats: new Map([["A1", 2]]), cents: 4000n };

const state = z.object({
  show: z.string(),
  at: z.date().nullable(),
  seats: z.map(z.string(), z.number()).nullable(),
  cents: z.bigint().nullable(),
  mailed: z.string().nullable(),
});
type State = z.infer<typeof state>;
const input: State = { show: "Hamlet", at: null, seats: null, cents: null, mailed: null };

/** What the nodes saw, on every worker: whether each value was what it is, not its JSON form. */
type Seen = Array<{ node: string; at: boolean; seats: boolean; cents: boolean }>;

function booking(seen: Seen) {
  return new Flow("booking", { state })
    .node("book", async (s, ctx) => {
      const booked = await ctx.call<Booking>("book", { show: s.show });
      seen.push({ node: "book", ...kinds(booked) });
      return { at: booked.at, seats: booked.seats, cents: booked.cents };
    })
    .node("mail", async (s, ctx) => {
      seen.push({ node: "mail", ...kinds(s) });
      return { mailed: await ctx.call<string>("email", { on: s.at!.toISOString() }) };
    })
    .edge("book", "mail")
    .end("mail");
}

function kinds(value: { at: unknown; seats: unknown; cents: unknown }) {
  return { at: value.at instanceof Date, seats: value.seats instanceof Map, cents: typeof value.cents === "bigint" };
}

const AS_THEY_ARE = { at: true, seats: true, cents: true };

function tools(ran: string[], book: () => unknown = () => BOOKED) {
  return new ToolRegistry()
    .tool("book", () => {
      ran.push("book");
      return book();
    })
    .tool("email", () => {
      ran.push("email");
      return "sent";
    });
}

/** A run of the booking flow whose worker dies at `crash`, then its recovery by another worker. */
async function crashAndRecover(crash: CrashPoint) {
  const store = new MemoryCheckpointStore();
  const ran: string[] = [];
  const seen: Seen = [];
  const flow = booking(seen);
  const dying = new DyingStore(store, crash);
  void new FlowRunner(new Executor(tools(ran)), { checkpoints: dying, checkpointKey: KEY, codec }).run(flow, input, {
    runId: "r",
  });
  await settle();
  const ranBefore = [...ran];
  const result = await new FlowRunner(new Executor(tools(ran)), {
    checkpoints: store,
    checkpointKey: KEY,
    codec,
  }).recover(flow, "r");
  return { store, ran, ranBefore, seen, result };
}

describe("a codec for values that are not plain JSON", () => {
  it("a tool's Date, Map and BigInt reach the node as they are, on the first run and replayed after a crash; the state keeps them", async () => {
    // The worker dies after book's result is recorded, before the superstep's checkpoint lands (with mail's first
    // call, after mail's node began): book replays.
    const { ran, ranBefore, seen, result } = await crashAndRecover({ op: "save", step: 1, when: "before" });
    expect(ranBefore).toEqual(["book"]);
    expect(ran).toEqual(["book", "email"]);
    expect(seen).toEqual([
      { node: "book", ...AS_THEY_ARE },
      { node: "mail", ...AS_THEY_ARE },
      { node: "book", ...AS_THEY_ARE },
      { node: "mail", ...AS_THEY_ARE },
    ]);
    expect(result).toMatchObject({ status: "done", state: { ...BOOKED, show: "Hamlet", mailed: "sent" } });
  });

  it("a state holding them is sealed in its encoded form and decoded by the worker that recovers it", async () => {
    // The worker dies before email starts: the checkpoint after book holds the state.
    const { store, ran, ranBefore, seen, result } = await crashAndRecover({
      op: "recordCall",
      kind: "started",
      tool: "email",
      when: "before",
    });
    expect(ranBefore).toEqual(["book"]);
    expect(ran).toEqual(["book", "email"]);
    expect(seen.at(-1)).toEqual({ node: "mail", ...AS_THEY_ARE });
    expect(result).toMatchObject({ status: "done", state: { ...BOOKED, mailed: "sent" } });
    const [done] = (await readCallLog(store, Sealer.withKeys(KEY), "r", [])).filter((r) => r.kind === "done");
    // The record holds the codec's plain JSON form.
    expect(done!.result).toEqual(JSON.parse(JSON.stringify(superjson.serialize(BOOKED))));
  });

  it("without a codec the same result is UnrecordableResult, as before", async () => {
    const ran: string[] = [];
    const runner = new FlowRunner(new Executor(tools(ran)), { checkpoints: new MemoryCheckpointStore() });
    await expect(runner.run(booking([]), input)).rejects.toThrow(UnrecordableResult);
  });

  it("without a codec, a result holding a Date (a database row's) is UnrecordableResult naming the codec option", async () => {
    const runner = new FlowRunner(new Executor(tools([])), { checkpoints: new MemoryCheckpointStore() });
    const error: unknown = await runner.run(booking([]), input).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnrecordableResult);
    expect((error as Error).message).toMatch(/a Date .*Without a `codec` option .*superjson/);
  });

  it("a result the codec cannot encode is UnrecordableResult; a state it cannot encode is InvalidInput before anything is written", async () => {
    const refusing: ValueCodec = {
      encode: () => {
        throw new Error("no");
      },
      decode: (json) => json,
    };
    const store = new MemoryCheckpointStore();
    const runner = new FlowRunner(new Executor(tools([])), { checkpoints: store, codec: refusing });
    await expect(runner.run(booking([]), input, { runId: "r" })).rejects.toThrow(InvalidInput);
    await expect(store.latest("r")).rejects.toThrow();
  });

  it("a codec that is not an object with encode and decode is InvalidInput", () => {
    for (const bad of [{}, { encode: () => null }, "superjson"])
      expect(
        () =>
          new FlowRunner(new Executor(tools([])), {
            checkpoints: new MemoryCheckpointStore(),
            codec: bad as unknown as ValueCodec,
          }),
      ).toThrow(/codec must be an object/);
  });

  it("a decision's { result } is stored as the codec encodes it and replayed as the value (by recover and by decideInDoubt)", async () => {
    for (const how of ["recover", "decideInDoubt"] as const) {
      const store = new MemoryCheckpointStore();
      const ran: string[] = [];
      const seen: Seen = [];
      const flow = booking(seen);
      const dying = new DyingStore(store, { op: "recordCall", kind: "done", tool: "book", when: "before" });
      const options = { checkpoints: dying, checkpointKey: KEY, codec };
      void new FlowRunner(new Executor(tools(ran)), options).run(flow, input, { runId: "r" });
      await settle();
      const runner = new FlowRunner(new Executor(tools(ran)), { ...options, checkpoints: store });
      const error = await runner.recover(flow, "r").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RecoveryNeedsDecision);
      const decide = { [(error as RecoveryNeedsDecision).calls[0]!.callId]: { result: BOOKED } };
      if (how === "decideInDoubt")
        await decideInDoubt("r", decide, { checkpoints: store, checkpointKey: KEY, codec, by: "ops" });
      const result = await runner.recover(flow, "r", how === "recover" ? { decide } : {});
      expect(result, how).toMatchObject({ status: "done", state: { ...BOOKED, mailed: "sent" } });
      // book ran once, on the worker that died; the decision's value replayed as it is.
      expect(ran, how).toEqual(["book", "email"]);
      expect(seen.at(-1), how).toEqual({ node: "mail", ...AS_THEY_ARE });
    }
  });

  it("a result an operator decides without the codec (the console) reaches a worker with the codec intact, through the codec as a tool's result", async () => {
    const Receipt = z.object({ seat: z.string(), cents: z.number(), at: z.date() });
    const receipts = new Flow("receipts", { state: z.object({ receipt: Receipt.partial().nullable() }) })
      .node("book", async (_, ctx) => ({ receipt: await ctx.call<z.infer<typeof Receipt>>("book", {}) }))
      .end("book");
    const ran: string[] = [];
    const store = new MemoryCheckpointStore();
    const dying = new DyingStore(store, { op: "recordCall", kind: "done", tool: "book", when: "before" });
    void new FlowRunner(new Executor(tools(ran)), { checkpoints: dying, checkpointKey: KEY, codec }).run(
      receipts,
      { receipt: null },
      { runId: "r" },
    );
    await settle();
    const runner = new FlowRunner(new Executor(tools(ran)), { checkpoints: store, checkpointKey: KEY, codec });
    const error = await runner.recover(receipts, "r").catch((e: unknown) => e);
    const callId = (error as RecoveryNeedsDecision).calls[0]!.callId;
    const operator = { checkpoints: store, checkpointKey: KEY, by: "console" };
    // Without the codec a Date cannot be stored: refused before anything is written.
    await expect(
      decideInDoubt("r", { [callId]: { result: { seat: "A1", cents: 4000, at: new Date(0) } } }, operator),
    ).rejects.toThrow(InvalidInput);
    await decideInDoubt("r", { [callId]: { result: { seat: "A1", cents: 4000 } } }, operator);
    const result = await runner.recover(receipts, "r");
    expect(result).toMatchObject({ status: "done", state: { receipt: { seat: "A1", cents: 4000 } } });
    expect(ran).toEqual(["book"]);
  });
});
