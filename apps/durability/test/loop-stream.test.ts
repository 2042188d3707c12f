import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { AI_SDK_MAJORS, type AiSdkMajor, childArgs, effects, mockVersion } from "./ai-sdk-majors.js";

// With the SQLite store: the workers need a store that outlives them (see loop-max-steps.test.ts).
const CHILD = fileURLToPath(new URL("./loop-stream-child.ts", import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface Worker {
  readonly signal: NodeJS.Signals | null;
  readonly parts: Record<string, unknown>[];
  readonly stderr: string;
}

/** Runs one streaming worker; SIGKILLs it once `killAt` holds for a part it printed. */
function worker(
  major: AiSdkMajor,
  dir: string,
  mode: "start" | "recover",
  killAt?: (parts: Record<string, unknown>[]) => boolean,
) {
  return new Promise<Worker>((resolve) => {
    const args = [...childArgs(major, CHILD), join(dir, "runs.db"), join(dir, "effects"), "chat-1", mode];
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
    const parts: Record<string, unknown>[] = [];
    let pending = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      const lines = (pending + chunk).split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines.filter(Boolean)) parts.push(JSON.parse(line) as Record<string, unknown>);
      if (killAt?.(parts) === true) child.kill("SIGKILL");
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("close", (_code, signal) => {
      clearTimeout(timer);
      resolve({ signal, parts, stderr });
    });
  });
}

// Each worker is a child process started through tsx: seconds each on a busy machine.
describe.each(AI_SDK_MAJORS)("a streaming tool loop with AI SDK %i", (major) => {
  it("SIGKILLed mid-stream: the recovery says so, replays the saved reply and tool result, and reruns the cut-off model call", async () => {
    const dir = mkdtempSync(join(tmpdir(), "durable-loop-stream-"));
    dirs.push(dir);
    const twoPieces = (parts: Record<string, unknown>[]) =>
      parts.filter((p) => p["type"] === "text-delta").length === 2;
    const first = await worker(major, dir, "start", twoPieces);
    expect(first.signal, first.stderr).toBe("SIGKILL");
    expect(first.parts.map((part) => part["type"])).toEqual([
      "run-start",
      "step-start",
      "tool-call",
      "step-finish",
      "tool-result",
      "step-start",
      "text-delta",
      "text-delta",
    ]);
    expect(first.parts[0]).toMatchObject({ recovered: false });

    const second = await worker(major, dir, "recover");
    expect(second.signal, second.stderr).toBeNull();
    // It starts where the run stands: the saved history, marked recovered, then the rerun model call.
    expect(second.parts[0]).toMatchObject({
      type: "run-start",
      runId: "chat-1",
      recovered: true,
      messages: [
        { role: "user", content: "Two seats" },
        { role: "assistant", toolCalls: [{ id: "c1", name: "hold_seats", args: { seats: 2 } }] },
        { role: "tool", toolCallId: "c1", result: { held: 2 } },
      ],
    });
    expect(second.parts.slice(1, -1).map((part) => part["type"])).toEqual([
      "step-start",
      "text-delta",
      "text-delta",
      "text-delta",
      "step-finish",
    ]);
    expect(second.parts[1]).toMatchObject({ modelCall: 3 });
    expect(second.parts.at(-1)).toMatchObject({
      result: {
        status: "done",
        text: "Two seats held.",
        // The saved replies' usage: the tool call's and the rerun's; the cut-off call was never saved.
        usage: { inputTokens: 20, outputTokens: 7 },
        steps: [{ finishReason: "tool-calls" }, { finishReason: "stop" }],
      },
    });
    expect(effects(dir, "tool")).toHaveLength(1);
    const modelCalls = effects(dir, "model");
    expect(modelCalls).toHaveLength(3);
    for (const line of modelCalls) expect(line.startsWith(mockVersion(major)), line).toBe(true);
  }, 120_000);
});
