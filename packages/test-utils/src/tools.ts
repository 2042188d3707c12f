import { ToolRegistry } from "@durable/core";
import { forever } from "./stores.js";

/** Counts how often each tool started; a tool may be made to hang forever, as in a worker that died inside it. */
export class Tools {
  readonly ran = new Map<string, number>();
  hangInside: string | undefined;

  count(tool: string): number {
    return this.ran.get(tool) ?? 0;
  }

  tool<A, R>(name: string, fn: (args: A) => R) {
    return async (a: A): Promise<R> => {
      this.ran.set(name, this.count(name) + 1);
      if (this.hangInside === name) await forever();
      return fn(a);
    };
  }

  registry(): ToolRegistry {
    return new ToolRegistry()
      .tool(
        "hold_seats",
        this.tool("hold_seats", (a: { seats: number }) => `held ${a.seats}`),
        { idempotent: true },
      )
      .tool(
        "charge_card",
        this.tool("charge_card", (a: { seats: number }) => `charged ${a.seats * 40}`),
      )
      .tool(
        "email_tickets",
        this.tool("email_tickets", (a: { show: string }) => `mailed ${a.show}`),
      );
  }
}
