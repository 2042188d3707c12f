import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Executor, jsonlEventSink, MemoryCheckpointStore, ToolRegistry } from "@durable/core";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { Flow, FlowRunner, type FlowRunnerOptions } from "../src/index.js";
import { KEY } from "./helpers.js";

// The store of an encrypted run holds nothing readable; its event log must not hold in the clear what the
// store encrypts: a call in doubt's arguments (a card number), a tool error's message (an SSN it quoted).

const CARD = "4242 4242 4242 4242";
const SSN = "123-45-6789";
const ENCRYPTION_KEY = "flow-tests-encryption-key-0123456789abcdef";

const dir = mkdtempSync(join(tmpdir(), "durable-encrypted-events-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const State = z.object({ note: z.string().default("") });
const checkout = new Flow("checkout", { state: State })
  .node("charge", async (_s, ctx) => ({ note: String(await ctx.call("charge", { card: CARD })) }))
  .end("charge");
const identity = new Flow("identity", { state: State })
  .node("verify", async (_s, ctx) => ({ note: String(await ctx.call("verify", {})) }))
  .end("verify");
const registry = new ToolRegistry()
  // Outlasts its timeout: the charge is in doubt, and its arguments are what a decision needs.
  .tool("charge", () => new Promise<never>(() => {}), { timeoutMs: 20 })
  .tool("verify", () => {
    throw new Error(`SSN ${SSN} does not match the name on file`);
  });

/** The event log of a charge left in doubt, recovered once, and a verification that failed, under `options`. */
async function eventLog(name: string, options: Partial<FlowRunnerOptions>): Promise<string> {
  const path = join(dir, `${name}.jsonl`);
  const runner = new FlowRunner(new Executor(registry), {
    checkpoints: new MemoryCheckpointStore(),
    checkpointKey: KEY,
    events: jsonlEventSink(path),
    ...options,
  });
  await runner.run(checkout, {}, { runId: "c" }).catch(() => undefined);
  await expect(runner.recover(checkout, "c")).rejects.toThrow(/in doubt/);
  await expect(runner.run(identity, {}, { runId: "v" })).rejects.toThrow(SSN);
  return readFileSync(path, "utf8");
}

describe("the events of an encrypted run", () => {
  it("leave out a call in doubt's arguments and error messages, and keep what happened", async () => {
    const log = await eventLog("encrypted", { encryptionKey: ENCRYPTION_KEY });
    expect(log).not.toContain(CARD);
    expect(log).not.toContain(SSN);
    const events = log
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const decision = events.find((event) => event["type"] === "run.needs-decision");
    expect(decision?.["calls"]).toMatchObject([{ tool: "charge", args: null, why: "started with no result" }]);
    expect(events.find((event) => event["type"] === "run.failed")?.["error"]).toBe(
      "ToolFailed (its message is withheld: the run is encrypted)",
    );
  });

  it("carry them with plainEvents, and without encryption", async () => {
    for (const [name, options] of [
      ["plain", { encryptionKey: ENCRYPTION_KEY, plainEvents: true }],
      ["unencrypted", {}],
    ] as const) {
      const log = await eventLog(name, options);
      expect(log, name).toContain(CARD);
      expect(log, name).toContain(SSN);
    }
  });

  it("refuses a plainEvents that is not a boolean", () => {
    const options = { checkpoints: new MemoryCheckpointStore(), checkpointKey: KEY, plainEvents: "yes" };
    expect(() => new FlowRunner(new Executor(registry), options as never)).toThrow(/plainEvents/);
  });
});
