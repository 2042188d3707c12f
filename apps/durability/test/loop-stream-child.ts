/**
 * A worker for the streaming crash test: streams the tool loop `runId` on the
 * SQLite file `db` with an AI SDK mock model (`streamText`), printing each
 * stream part as a JSON line as it arrives, then `{ result }`. `start` starts
 * the loop, and its second model call hangs after two text pieces (the test
 * kills the worker there); `recover` takes the loop over with
 * `streamRecoveredToolLoop`. The model and the tool append a line to
 * `effects` for each time they really run.
 */
import { appendFileSync } from "node:fs";
import { tool } from "ai";
import * as aiTest from "ai/test";
import { z } from "zod";
import { streamRecoveredToolLoop, streamToolLoop } from "@durable/loop";
import { aiSdkModel, durableTools } from "@durable/loop/ai-sdk";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";

const [db, effects, runId, mode] = process.argv.slice(2) as [string, string, string, "start" | "recover"];
const { convertArrayToReadableStream } = aiTest;
// AI SDK 7's mock of its model interface, or 6's when the child runs with ai-sdk-6.mjs
// (typed as 7's: both take the results and stream parts used here).
const MockModel = (aiTest.MockLanguageModelV4 ?? aiTest.MockLanguageModelV3) as typeof aiTest.MockLanguageModelV4;
const KEY = "stream-crash-test-key-0123456789abcdef";

const usage = (output: number) => ({
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: output, text: output, reasoning: 0 },
});
const finish = (unified: "stop" | "tool-calls", output: number) => ({
  type: "finish" as const,
  finishReason: { unified, raw: undefined },
  usage: usage(output),
});

const model = new MockModel({
  doStream: async ({ prompt }) => {
    appendFileSync(effects, `model ${model.specificationVersion} ${process.pid}\n`);
    const afterTool = prompt.at(-1)?.role === "tool";
    if (!afterTool)
      return {
        stream: convertArrayToReadableStream([
          { type: "stream-start", warnings: [] },
          { type: "tool-call", toolCallId: "c1", toolName: "hold_seats", input: '{"seats":2}' },
          finish("tool-calls", 3),
        ]),
      };
    const text = ["Two ", "seats ", "held."].map((delta) => ({ type: "text-delta" as const, id: "t", delta }));
    const start = [
      { type: "stream-start" as const, warnings: [] },
      { type: "text-start" as const, id: "t" },
    ];
    if (mode === "start")
      // Two pieces, then nothing: the reply never completes before the worker is killed.
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const part of [...start, ...text.slice(0, 2)]) controller.enqueue(part);
          },
        }),
      };
    return {
      stream: convertArrayToReadableStream([...start, ...text, { type: "text-end", id: "t" }, finish("stop", 4)]),
    };
  },
});

const registry = durableTools({
  hold_seats: tool({
    description: "Holds seats",
    inputSchema: z.object({ seats: z.number().int() }),
    execute: async ({ seats }) => {
      appendFileSync(effects, `tool ${process.pid}\n`);
      return { held: seats };
    },
  }),
});
const store = new SQLiteCheckpointStore(db);
const options = { checkpoints: store, checkpointKey: KEY };
const stream =
  mode === "start"
    ? streamToolLoop(aiSdkModel(model), registry, [{ role: "user", content: "Two seats" }], { ...options, runId })
    : // The first worker was killed: this one takes its lease over.
      streamRecoveredToolLoop(aiSdkModel(model), registry, runId, { ...options, takeOver: true });
for await (const part of stream) console.log(JSON.stringify(part));
console.log(JSON.stringify({ result: await stream.result }));
await store.close();
