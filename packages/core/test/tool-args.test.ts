import { describe, expect, expectTypeOf, it } from "vitest";
import { type JsonValue, type ToolContext, type ToolFn, ToolRegistry } from "../src/index.js";

// Checked by `tsc` (the package's typecheck) as much as by vitest: a tool's
// arguments are never `any`, and naming their shape stays one annotation.
interface Order {
  readonly seats: number;
}

describe("a tool's arguments", () => {
  it("are plain JSON when the tool does not say, never any", () => {
    new ToolRegistry().tool("t", (args, ctx) => {
      expectTypeOf(args).not.toBeAny();
      expectTypeOf(args).toEqualTypeOf<JsonValue>();
      expectTypeOf(ctx).toEqualTypeOf<ToolContext>();
    });
    expectTypeOf<Parameters<ToolFn>[0]>().toEqualTypeOf<JsonValue>();
  });

  it("take the shape the tool names, an interface or an object type", () => {
    const registry = new ToolRegistry()
      .tool("hold", (a: Order) => a.seats)
      .tool("mail", async (a: { show: string }) => a.show)
      .tool("ping", () => "pong");
    // What the registry keeps takes what the executor passes: parsed JSON.
    expectTypeOf(registry.get("hold").fn).parameter(0).toEqualTypeOf<JsonValue>();
    expect(registry.list().map((t) => t.name)).toEqual(["hold", "mail", "ping"]);
  });
});
