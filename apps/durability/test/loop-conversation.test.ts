import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { AI_SDK_MAJORS, type AiSdkMajor, childArgs, effects, mockVersion } from "./ai-sdk-majors.js";

// With the SQLite store: the workers need a store that outlives them (see loop-max-steps.test.ts).
const CHILD = fileURLToPath(new URL("./loop-conversation-child.ts", import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs one worker process to its end. */
function worker(major: AiSdkMajor, dir: string, args: string[], killAfterTool = false) {
  const env = { ...process.env, KILL_AFTER_TOOL: killAfterTool ? "1" : "" };
  const all = [...childArgs(major, CHILD), join(dir, "runs.db"), join(dir, "effects"), "talk-1", ...args];
  const result = spawnSync(process.execPath, all, { env, encoding: "utf8", timeout: 60_000 });
  const out = result.stdout.trim();
  return {
    signal: result.signal,
    result: out === "" ? undefined : (JSON.parse(out) as unknown),
    stderr: result.stderr,
  };
}

// Each worker is a child process started through tsx: seconds each on a busy machine.
describe.each(AI_SDK_MAJORS)("a conversation's second turn with AI SDK %i", (major) => {
  it("SIGKILLed after its tool ran: the recovery finishes the turn on the same run id, the tool not run again", () => {
    const dir = mkdtempSync(join(tmpdir(), "durable-loop-conversation-"));
    dirs.push(dir);
    const first = worker(major, dir, ["turn", "Hi"]);
    expect(first.result, first.stderr).toMatchObject({ status: "awaiting-user", runId: "talk-1", turn: 1 });

    const second = worker(major, dir, ["turn", "Two seats"], true);
    expect(second.signal, second.stderr).toBe("SIGKILL");
    expect(effects(dir, "tool")).toHaveLength(1);

    const recovered = worker(major, dir, ["recover"]);
    expect(recovered.result, recovered.stderr).toMatchObject({
      status: "awaiting-user",
      runId: "talk-1",
      turn: 2,
      text: "Two seats held.",
      messages: ["user", "assistant", "user", "assistant", "tool", "assistant"],
    });
    expect(effects(dir, "tool")).toHaveLength(1);
    // Turn 1's reply, turn 2's tool call, the call cut off by the kill, and its rerun.
    const modelCalls = effects(dir, "model");
    expect(modelCalls).toHaveLength(4);
    for (const line of modelCalls) expect(line.startsWith(mockVersion(major)), line).toBe(true);

    const third = worker(major, dir, ["turn", "Thanks"]);
    expect(third.result, third.stderr).toMatchObject({
      status: "awaiting-user",
      turn: 3,
      text: "You said: Thanks",
      messages: ["user", "assistant", "user", "assistant", "tool", "assistant", "user", "assistant"],
    });
  }, 120_000);
});
