import { MemoryCheckpointStore, ToolRegistry } from "@durable/core";
import { parentOf, registerOtel } from "@durable/test-utils/otel";
import { trace } from "@opentelemetry/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { aiSdkModel } from "../src/ai-sdk.js";
import { runToolLoop } from "../src/index.js";
import { calls, major, said, scripted } from "./ai-mocks.js";

// A tool loop under OpenTelemetry: each model call is a `durable.model` span under its step, active while the model
// runs, so the AI SDK's own telemetry spans (6: `experimental_telemetry`) are its children; each tool call is a
// `durable.call` span under the step that ran it.

let otel: ReturnType<typeof registerOtel>;
beforeEach(() => {
  otel = registerOtel();
});
afterEach(() => otel.dispose());

describe(`a tool loop's spans with AI SDK ${major}`, () => {
  it("puts each model call under its step, the AI SDK's spans under it, and each tool call under the step that ran it", async () => {
    const { model } = scripted([calls(["call-1", "hold_seats", { seats: 2 }]), said("Two seats held.")]);
    const registry = new ToolRegistry().tool("hold_seats", (a: { seats: number }) => ({ held: a.seats }));
    const settings = major === 6 ? { experimental_telemetry: { isEnabled: true } } : {};
    await trace.getTracer("app").startActiveSpan("POST /chat", async (request) => {
      const history = [{ role: "user" as const, content: "Two seats please" }];
      await runToolLoop(aiSdkModel(model, settings as never), registry, history, {
        runId: "chat",
        checkpoints: new MemoryCheckpointStore(),
      });
      request.end();
    });
    const spans = otel.spans();
    const named = (name: string) => spans.filter((span) => span.name === name);
    expect(new Set(spans.map((span) => span.spanContext().traceId)).size).toBe(1);
    const [attempt] = named("durable.run tool-loop");
    const steps = named("durable.step tool-loop");
    const models = named("durable.model");
    const [tool] = named("durable.call hold_seats");
    expect(attempt).toBeDefined();
    for (const step of steps) expect(parentOf(step)).toBe(attempt!.spanContext().spanId);
    expect(models.map((span) => span.attributes["durable.model.call"])).toEqual([1, 2]);
    const stepOf = (span: (typeof spans)[number]) => steps.find((step) => step.spanContext().spanId === parentOf(span));
    for (const call of models) expect(stepOf(call)).toBeDefined();
    expect(stepOf(tool!)).toBeDefined();
    expect(stepOf(tool!)).not.toBe(stepOf(models[0]!));
    if (major === 6) {
      const generations = named("ai.generateText");
      expect(generations.map((span) => parentOf(span))).toEqual(models.map((span) => span.spanContext().spanId));
    }
  });
});
