import { describe, expect, it } from "vitest";
import { customerOf, queueFigures, queueViolations } from "../src/queue.js";
import type { Execution } from "../src/ledger.js";

// The queue soak's verdict reads who was inside a tool when from the ledger: these check its arithmetic.

const limits = { concurrency: 2, perKey: 1, customers: 2 };
const customer = (runId: string) => customerOf(Number(runId.slice("soak-".length)), limits);

function run(k: number, start: number, end: number | undefined, worker = "0.1"): Execution {
  return {
    worker,
    start,
    ...(end === undefined ? {} : { end }),
    runId: `soak-${k}`,
    callId: `c${start}`,
    tool: "t",
    key: "k",
  };
}

describe("the queue soak's verdict", () => {
  it("counts runs inside a tool at once, a run's tools one after another once, a tool ended as the next began apart", () => {
    const figures = queueFigures([run(0, 0, 10), run(0, 10, 20), run(1, 5, 15), run(2, 20, 30)], [], customer);
    expect(figures).toEqual({ mostInside: 2, mostOfOneCustomer: 1 });
    expect(queueViolations(figures, limits)).toEqual([]);
  });

  it("a third run inside a tool, and two of one customer, are violations", () => {
    const figures = queueFigures([run(0, 0, 10), run(1, 1, 10), run(2, 2, 10)], [], customer);
    expect(figures).toEqual({ mostInside: 3, mostOfOneCustomer: 2 });
    expect(queueViolations(figures, limits)).toHaveLength(2);
  });

  it("an execution a kill cut short ends when its worker died, and one of a live worker never ends", () => {
    const death = { worker: "0.1", signal: "SIGKILL" as const, signalledAt: 9, diedAt: 10 };
    expect(queueFigures([run(0, 0, undefined), run(2, 11, 20, "1.1")], [death], customer).mostOfOneCustomer).toBe(1);
    expect(
      queueFigures([run(0, 0, undefined, "1.1"), run(2, 11, 20, "2.1")], [death], customer).mostOfOneCustomer,
    ).toBe(2);
  });
});
