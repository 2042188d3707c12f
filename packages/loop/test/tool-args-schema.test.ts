import { describe, expect, it } from "vitest";
import { InvalidInput, MemoryCheckpointStore, ToolRegistry } from "@durable/core";
import { z } from "zod";
import { runToolLoop, type LoopModel, type Message, type ModelReply } from "../src/index.js";

/** Asks to book `seats` (as the model gives it), then reports what the tool said. */
function bookingModel(seats: number) {
  const seen: Array<{ readonly messages: readonly Message[]; readonly tools: unknown }> = [];
  const model: LoopModel = {
    async reply(messages, tools): Promise<ModelReply> {
      seen.push({ messages, tools });
      const result = messages.find((m) => m.role === "tool");
      return result === undefined
        ? { text: "", toolCalls: [{ id: "b1", name: "book", args: { seats } }] }
        : { text: `the tool said: ${result.content}`, toolCalls: [] };
    },
  };
  return { model, seen };
}

const Booking = z.object({ seats: z.number().int().min(1), note: z.string().default("") });

function booking() {
  const got: unknown[] = [];
  const registry = new ToolRegistry().tool(
    "book",
    (args: z.infer<typeof Booking>) => {
      got.push(args);
      return `booked ${args.seats}`;
    },
    { args: Booking, description: "books seats" },
  );
  return { got, registry };
}

describe("a tool's args schema in the tool loop", () => {
  it("gives the model the schema's JSON Schema, and the tool the schema's output", async () => {
    const { model, seen } = bookingModel(2);
    const { got, registry } = booking();
    const result = await runToolLoop(model, registry, [{ role: "user", content: "two seats" }], {
      checkpoints: new MemoryCheckpointStore(),
    });
    expect(result).toMatchObject({ status: "done", text: "the tool said: booked 2" });
    expect(got).toEqual([{ seats: 2, note: "" }]);
    expect(seen[0]?.tools).toMatchObject([
      {
        name: "book",
        description: "books seats",
        parameters: { type: "object", properties: { seats: { type: "integer" } }, required: ["seats"] },
      },
    ]);
  });

  it("tells the model why arguments the schema refuses are wrong; the tool does not run and nothing is recorded for it", async () => {
    const { model } = bookingModel(0);
    const { got, registry } = booking();
    const store = new MemoryCheckpointStore();
    const result = await runToolLoop(model, registry, [{ role: "user", content: "no seats" }], {
      checkpoints: store,
      runId: "chat",
    });
    expect(result).toMatchObject({ status: "done" });
    expect(result.status === "done" && result.text).toMatch(
      /^the tool said: error: The arguments of book are not valid: seats: /,
    );
    expect(got).toEqual([]);
    expect((await store.calls("chat")).length).toBe(2); // the two model records, no call record
  });

  it("an args option that is not a Standard Schema is InvalidInput when the tool is registered", () => {
    expect(() => new ToolRegistry().tool("book", () => 1, { args: { seats: "number" } as never })).toThrow(
      InvalidInput,
    );
  });
});
