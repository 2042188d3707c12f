/**
 * A worker for the conversation crash test, on the SQLite file `db` with an
 * AI SDK mock model: `turn <text>` gives the conversation `runId` its next
 * user message (starting it when it is not stored); `recover` takes it over.
 * The model answers from the last message; it SIGKILLs its own worker when
 * `KILL_AFTER_TOOL` is set and it is asked after a tool result. The model and
 * the tool append a line to `effects` for each time they really run. Prints
 * the result as JSON.
 */
import { appendFileSync } from "node:fs";
import { tool } from "ai";
import * as aiTest from "ai/test";
import { z } from "zod";
import { recoverToolLoop, runToolLoop } from "@durable/loop";
import { aiSdkModel, durableTools } from "@durable/loop/ai-sdk";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";

const [db, effects, runId, mode, text = ""] = process.argv.slice(2) as [string, string, string, string, string?];
const KEY = "conversation-crash-test-key-0123456789abcdef";
const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};
const stop = { unified: "stop" as const, raw: undefined };

// AI SDK 7's mock of its model interface, or 6's when the child runs with ai-sdk-6.mjs
// (typed as 7's: both take the results used here).
const MockModel = (aiTest.MockLanguageModelV4 ?? aiTest.MockLanguageModelV3) as typeof aiTest.MockLanguageModelV4;
const model = new MockModel({
  doGenerate: async ({ prompt }) => {
    appendFileSync(effects, `model ${model.specificationVersion} ${process.pid}\n`);
    const last = prompt.at(-1);
    if (last?.role === "tool") {
      if (process.env["KILL_AFTER_TOOL"] === "1") process.kill(process.pid, "SIGKILL");
      return { content: [{ type: "text", text: "Two seats held." }], finishReason: stop, usage, warnings: [] };
    }
    const said = last?.role === "user" ? last.content.map((p) => (p.type === "text" ? p.text : "")).join("") : "";
    if (said === "Two seats")
      return {
        content: [{ type: "tool-call", toolCallId: "c1", toolName: "hold_seats", input: '{"seats":2}' }],
        finishReason: { unified: "tool-calls", raw: undefined },
        usage,
        warnings: [],
      };
    return { content: [{ type: "text", text: `You said: ${said}` }], finishReason: stop, usage, warnings: [] };
  },
});

const registry = durableTools({
  hold_seats: tool({
    inputSchema: z.object({ seats: z.number().int() }),
    execute: async ({ seats }) => {
      appendFileSync(effects, `tool ${process.pid}\n`);
      return { held: seats };
    },
  }),
});
const store = new SQLiteCheckpointStore(db);
const options = { checkpoints: store, checkpointKey: KEY };
const result =
  mode === "recover"
    ? // The worker of the turn was killed: this one takes its lease over.
      await recoverToolLoop(aiSdkModel(model), registry, runId, { ...options, takeOver: true })
    : await runToolLoop(aiSdkModel(model), registry, [{ role: "user", content: text }], {
        ...options,
        runId,
        conversation: true,
      });
console.log(
  JSON.stringify(
    "messages" in result ? { ...result, messages: result.messages.map((message) => message.role) } : result,
  ),
);
await store.close();
