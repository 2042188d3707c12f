import { jsonSchema, tool, type ModelMessage } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { InvalidInput, MemoryCheckpointStore } from "@durable/core";
import { retryToolLoop, runToolLoop } from "../src/index.js";
import { aiSdkModel, durable, durableTools } from "../src/ai-sdk.js";
import { calls, major, said, scripted } from "./ai-mocks.js";

const ask = [{ role: "user" as const, content: "Two seats for Hamlet" }];

/** A ToolSet as an AI SDK user writes it, keeping what each execute was given. */
function ticketTools() {
  const seen: { input: unknown; toolCallId: string; messages: ModelMessage[]; signal: boolean }[] = [];
  const tools = {
    hold_seats: tool({
      description: "Holds seats for a show",
      inputSchema: z.object({ show: z.string(), seats: z.number().int().min(1) }),
      execute: async (input, { toolCallId, messages, abortSignal }) => {
        seen.push({ input, toolCallId, messages, signal: abortSignal instanceof AbortSignal });
        return { held: input.seats, show: input.show };
      },
    }),
    charge_card: tool({
      description: "Charges the card",
      inputSchema: z.object({ cents: z.number().int() }),
      execute: async ({ cents }) => `charged ${cents}`,
    }),
  };
  return { tools, seen };
}

describe(`durableTools with AI SDK ${major}`, () => {
  it("a misspelled option of a tool (retries) is InvalidInput naming the tool and retry", () => {
    const { tools } = ticketTools();
    expect(() => durableTools(tools, { hold_seats: { retries: 3 } as never })).toThrow(
      new InvalidInput('durableTools: tool "hold_seats": unknown option `retries`; did you mean `retry`?'),
    );
    expect(() => durable(tools.hold_seats, { idempotnet: true } as never)).toThrow(
      new InvalidInput("durable: unknown option `idempotnet`; did you mean `idempotent`?"),
    );
  });

  it("runs an AI SDK ToolSet with zod schemas as it is: spec, typed input, toolCallId, messages and signal", async () => {
    const { tools, seen } = ticketTools();
    const { model, prompts } = scripted([
      calls(["call-1", "hold_seats", { show: "Hamlet", seats: 2 }]),
      said("Two seats held."),
    ]);
    const result = await runToolLoop(aiSdkModel(model), durableTools(tools), ask, {
      checkpoints: new MemoryCheckpointStore(),
    });
    expect(result).toMatchObject({ status: "done", text: "Two seats held." });
    // The model is told each tool's description and the JSON Schema of its zod schema.
    expect(prompts[0]?.tools).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: "hold_seats",
          description: "Holds seats for a show",
          inputSchema: expect.objectContaining({
            type: "object",
            properties: expect.objectContaining({ show: { type: "string" } }),
            required: ["show", "seats"],
          }),
        }),
      ]),
    );
    expect(seen).toEqual([
      {
        input: { show: "Hamlet", seats: 2 },
        toolCallId: "call-1",
        messages: [
          { role: "user", content: "Two seats for Hamlet" },
          {
            role: "assistant",
            content: [
              { type: "tool-call", toolCallId: "call-1", toolName: "hold_seats", input: { show: "Hamlet", seats: 2 } },
            ],
          },
        ],
        signal: true,
      },
    ]);
    expect(JSON.stringify(prompts[1])).toContain('"output":{"type":"json","value":{"held":2,"show":"Hamlet"}}');
  });

  it("sends arguments the zod schema refuses back to the model, without running the tool", async () => {
    const { tools, seen } = ticketTools();
    const { model, prompts } = scripted([
      calls(["call-1", "hold_seats", { show: "Hamlet", seats: 0 }]),
      said("Sorry."),
    ]);
    await runToolLoop(aiSdkModel(model), durableTools(tools), ask, { checkpoints: new MemoryCheckpointStore() });
    expect(seen).toEqual([]);
    expect(JSON.stringify(prompts[1])).toMatch(/"output":\{"type":"error-text","value":"error: [^"]*seats/);
  });

  it("sends a tool's error to the model as an error result, recorded so it is not run again", async () => {
    let runs = 0;
    const tools = {
      hold_seats: tool({
        inputSchema: z.object({ seats: z.number() }),
        execute: async (): Promise<string> => {
          runs++;
          throw new Error("sold out");
        },
      }),
    };
    const { model, prompts } = scripted([calls(["call-1", "hold_seats", { seats: 2 }]), said("Sold out, sorry.")]);
    const result = await runToolLoop(aiSdkModel(model), durableTools(tools), ask, {
      checkpoints: new MemoryCheckpointStore(),
    });
    expect(result).toMatchObject({ status: "done", text: "Sold out, sorry." });
    expect(runs).toBe(1);
    expect(JSON.stringify(prompts[1])).toContain('"output":{"type":"error-text","value":"error: Error: sold out"}');
  });

  it("replays a finished tool call from the store: a retry after the model failed does not run it again", async () => {
    const { tools, seen } = ticketTools();
    let failing = true;
    // The second reply is lost to the outage; the third answers the retry.
    const { model } = scripted([
      calls(["call-1", "hold_seats", { show: "Hamlet", seats: 2 }]),
      said("Held."),
      said("Held."),
    ]);
    const flaky = new Proxy(model as object, {
      get(target, key, receiver) {
        const value: unknown = Reflect.get(target, key, receiver);
        if (key !== "doGenerate" || typeof value !== "function") return value;
        return async (options: unknown) => {
          const reply: unknown = await value.call(target, options);
          if ((reply as { content: { type: string }[] }).content[0]?.type === "text" && failing) {
            failing = false;
            throw new Error("the provider is down");
          }
          return reply;
        };
      },
    });
    const store = new MemoryCheckpointStore();
    const registry = durableTools(tools);
    await expect(
      runToolLoop(aiSdkModel(flaky as typeof model, { maxRetries: 0 }), registry, ask, {
        runId: "r",
        checkpoints: store,
      }),
    ).rejects.toThrow(/provider is down/);
    expect(seen).toHaveLength(1);
    await expect(retryToolLoop(aiSdkModel(model), registry, "r", { checkpoints: store })).resolves.toMatchObject({
      status: "done",
    });
    expect(seen).toHaveLength(1);
  });

  it("takes durable options per tool: durable(tool, …) and by name; needsApproval: true pauses", async () => {
    const { tools } = ticketTools();
    const registry = durableTools(
      {
        hold_seats: durable(tools.hold_seats, { idempotent: true, retry: { attempts: 3 } }),
        charge_card: tools.charge_card,
      },
      { charge_card: { approval: true, timeoutMs: 5_000 } },
    );
    expect(registry.get("hold_seats")).toMatchObject({ idempotent: true, approval: false, retry: { attempts: 3 } });
    expect(registry.get("charge_card")).toMatchObject({ idempotent: false, approval: true, timeoutMs: 5_000 });
    const asked = durableTools({
      charge_card: tool({
        inputSchema: z.object({ cents: z.number() }),
        needsApproval: true,
        execute: async () => "ok",
      }),
    });
    const { model } = scripted([calls(["call-1", "charge_card", { cents: 500 }])]);
    const paused = await runToolLoop(aiSdkModel(model), asked, ask, { checkpoints: new MemoryCheckpointStore() });
    expect(paused).toMatchObject({ status: "paused", approvals: [{ tool: "charge_card", args: { cents: 500 } }] });
  });

  it("checks tool names and options at compile time, and at run time", () => {
    const { tools } = ticketTools();
    // @ts-expect-error: there is no tool named hold_seat
    expect(() => durableTools(tools, { hold_seat: { idempotent: true } })).toThrow(InvalidInput);
    // @ts-expect-error: idempotent is a boolean
    expect(() => durableTools(tools, { hold_seats: { idempotent: "yes" } })).toThrow(InvalidInput);
  });

  it("takes a jsonSchema() tool with its validate, and refuses tools the loop cannot run", async () => {
    const seats = jsonSchema<{ seats: number }>(
      { type: "object", properties: { seats: { type: "number" } } },
      {
        validate: (value) =>
          typeof (value as { seats?: unknown }).seats === "number"
            ? { success: true, value: value as { seats: number } }
            : { success: false, error: new Error("seats must be a number") },
      },
    );
    const registry = durableTools({ hold: tool({ inputSchema: seats, execute: async ({ seats: n }) => n * 2 }) });
    const { model, prompts } = scripted([
      calls(["c1", "hold", { seats: "two" }]),
      calls(["c2", "hold", { seats: 2 }]),
      said("ok"),
    ]);
    await runToolLoop(aiSdkModel(model), registry, ask, { checkpoints: new MemoryCheckpointStore() });
    expect(JSON.stringify(prompts[1])).toContain("seats must be a number");
    expect(JSON.stringify(prompts[2])).toContain('"output":{"type":"json","value":4}');

    const noExecute = { ask_user: tool({ inputSchema: z.object({ q: z.string() }) }) };
    expect(() => durableTools(noExecute)).toThrow(/has no execute/);
    const approvalFn = {
      pay: tool({ inputSchema: z.object({}), needsApproval: async () => true, execute: async () => "paid" }),
    };
    expect(() => durableTools(approvalFn)).toThrow(/needsApproval must be true or false/);
  });
});
