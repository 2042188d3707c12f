import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { FAULT_POINTS, parseFaultPoint } from "../src/internal.js";

const CHILD = fileURLToPath(new URL("./fault-point-child.ts", import.meta.url));

function child(faultPoint: string) {
  const result = spawnSync(process.execPath, ["--import", "tsx", CHILD], {
    env: { ...process.env, DURABLE_FAULT_POINT: faultPoint },
    encoding: "utf8",
  });
  return { signal: result.signal, stdout: result.stdout.trim().split("\n").filter(Boolean), stderr: result.stderr };
}

describe("fault points", () => {
  it("reads <point>, <point>@<n> and trace; unset or empty is off", () => {
    expect(parseFaultPoint(undefined)).toBeUndefined();
    expect(parseFaultPoint("")).toBeUndefined();
    expect(parseFaultPoint("trace")).toEqual({ trace: true });
    expect(parseFaultPoint("call.after-done")).toEqual({ trace: false, point: "call.after-done", hit: 1 });
    expect(parseFaultPoint("tool.inside@3")).toEqual({ trace: false, point: "tool.inside", hit: 3 });
  });

  it("a name that is no fault point, or a bad count, is a TypeError that lists the points", () => {
    expect(() => parseFaultPoint("call.after-dome")).toThrow(
      /names no fault point: use trace, or <point>\[@<n>\] with one of call.before-started/,
    );
    expect(() => parseFaultPoint("tool.inside@0")).toThrow(TypeError);
    expect(() => parseFaultPoint("tool.inside@x")).toThrow(TypeError);
  });

  it("trace prints each point a call and a save reach, in order, and kills nothing", () => {
    const { signal, stdout, stderr } = child("trace");
    expect(signal).toBeNull();
    expect(stdout).toEqual(["effect 1", "effect 2", "finished"]);
    const call = ["call.before-started", "call.after-started", "tool.inside", "call.before-done", "call.after-done"];
    const save = ["checkpoint.before-save", "checkpoint.after-save"];
    const points = stderr
      .split("\n")
      .filter((l) => l.startsWith("durable-fault-point "))
      .map((l) => l.slice(20));
    expect(points).toEqual([...save, ...call, ...call, ...save]);
    expect(points.every((p) => (FAULT_POINTS as readonly string[]).includes(p))).toBe(true);
  });

  it.each([
    ["call.before-started", []],
    ["call.after-started@2", ["effect 1"]],
    ["tool.inside@2", ["effect 1", "effect 2"]],
    ["call.after-done@2", ["effect 1", "effect 2"]],
    ["checkpoint.before-save@2", ["effect 1", "effect 2"]],
  ])("%s: the process dies there with SIGKILL", (point, printed) => {
    const { signal, stdout } = child(point);
    expect(signal).toBe("SIGKILL");
    expect(stdout).toEqual(printed);
  });

  it("a point armed for a later hit than the run reaches kills nothing", () => {
    expect(child("call.after-done@3")).toMatchObject({ signal: null, stdout: ["effect 1", "effect 2", "finished"] });
  });
});
