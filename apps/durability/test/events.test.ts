import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { printedLines } from "@durable/test-utils/processes";
import { afterEach, describe, expect, it } from "vitest";

const CHILD = fileURLToPath(new URL("./events-child.ts", import.meta.url));
/** The run's wait for `delivered` (events-child.ts). */
const DELIVERY_TIMEOUT_MS = 1_500;
const RUN = "order-1";

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Starts a process of events-child.ts, with the lines it prints. */
function child(dir: string, mode: "start" | "serve" | "send", ...args: string[]) {
  const process_ = spawn(
    process.execPath,
    ["--import", "tsx", CHILD, mode, join(dir, "runs.db"), join(dir, "effects"), RUN, ...args],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  children.push(process_);
  return { child: process_, line: printedLines(process_).line };
}

/** Sends one event from a process of its own, and gives what `sendEvent` said. */
async function send(dir: string, name: string, payload: unknown, key: string): Promise<{ status: string }> {
  const sender = child(dir, "send", name, JSON.stringify(payload), key);
  return JSON.parse((await sender.line("sent ")).slice("sent ".length));
}

/** What the tools really did, in order: the verdict comes from here, not from the store. */
function effects(dir: string): Array<{ tool: string; args: Record<string, unknown>; pid: number; at: number }> {
  return readFileSync(join(dir, "effects"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

describe("events across processes (SQLite)", () => {
  it("a run waits for an event with its worker SIGKILLed: an event sent before its wait, one during it, a resend and a timeout each behave as the protocol says, each tool run once", {
    timeout: 90_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "durable-events-"));
    dirs.push(dir);
    const first = child(dir, "start");
    const waiting = JSON.parse((await first.line("waiting ")).slice("waiting ".length));
    expect(waiting).toMatchObject({ status: "asleep", waitsFor: ["approved"] });
    await first.line("serving");
    first.child.kill("SIGKILL");
    await new Promise((resolve) => first.child.once("exit", resolve));

    // Before its wait: the run waits for `approved`, not yet for `label`; the label is kept until it does.
    expect(await send(dir, "label", "L-7", "label-1")).toMatchObject({ status: "sent" });
    // During its wait, with no worker alive: it is kept, and the run is claimable at once.
    expect(await send(dir, "approved", { by: "ada" }, "approved-1")).toMatchObject({ status: "sent" });
    // The webhook's retry of the same event: a no-op.
    expect(await send(dir, "approved", { by: "ada" }, "approved-1")).toMatchObject({ status: "duplicate" });

    const second = child(dir, "serve");
    await second.line("done");
    const made = effects(dir);
    expect(made.map((e) => e.tool)).toEqual(["charge", "ship", "close"]);
    const [charge, ship, close] = made as [(typeof made)[0], (typeof made)[0], (typeof made)[0]];
    expect(charge.pid).toBe(first.child.pid);
    expect(ship).toMatchObject({ pid: second.child.pid, args: { approved: { by: "ada" } } });
    // The label sent before its wait was taken; `delivered` never came, and its wait timed out.
    expect(close).toMatchObject({ pid: second.child.pid, args: { label: "L-7", delivered: "timeout" } });
    expect(close.at - ship.at).toBeGreaterThanOrEqual(DELIVERY_TIMEOUT_MS);

    // The run is done: a late event is refused, a resend of one it took is still a no-op.
    const late = child(dir, "send", "delivered", "null", "delivered-1");
    expect(await late.line("refused ")).toBe("refused RunAlreadyEnded");
    expect(await send(dir, "approved", { by: "ada" }, "approved-1")).toMatchObject({ status: "duplicate" });
  });
});
