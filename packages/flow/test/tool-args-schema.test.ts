import { InvalidToolArgs, MemoryCheckpointStore, ToolRegistry } from "@durable/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Call, Flow } from "../src/index.js";
import { runnerOn } from "./helpers.js";

const Charge = z.object({ cents: z.number().int().positive(), currency: z.string().default("EUR") });

describe("a tool's args schema in a flow", () => {
  it("validates a call's arguments before its started record: the tool gets the schema's output; refused ones fail the node with InvalidToolArgs, and the tool never runs", async () => {
    const got: unknown[] = [];
    const registry = new ToolRegistry().tool(
      "charge",
      (args: z.infer<typeof Charge>) => {
        got.push(args);
        return "charged";
      },
      { args: Charge },
    );
    const flow = (cents: number) =>
      new Flow("pay", { state: z.object({ note: z.string() }) })
        .node("pay", new Call("charge", { args: () => ({ cents }), into: "note" }))
        .end("pay");

    const store = new MemoryCheckpointStore();
    expect(await runnerOn(store, registry).run(flow(4200), { note: "" }, { runId: "ok" })).toMatchObject({
      status: "done",
      state: { note: "charged" },
    });
    expect(got).toEqual([{ cents: 4200, currency: "EUR" }]);

    const refused = await runnerOn(store, registry)
      .run(flow(-5), { note: "" }, { runId: "bad" })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InvalidToolArgs);
    expect(refused).toMatchObject({ tool: "charge", problems: expect.stringMatching(/^cents: /) });
    expect(got).toHaveLength(1);
    expect(await store.calls("bad")).toEqual([]);
    expect((await store.latest("bad")).status).toBe("failed");
  });
});
