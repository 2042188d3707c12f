import type { ModelMessage } from "ai";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MemoryCheckpointStore, ToolRegistry } from "@durable/core";
import { recoverToolLoop, runToolLoop, type LoopModel } from "../src/index.js";
import { aiSdkModel, fromModelMessages, toModelMessages } from "../src/ai-sdk.js";
import { finish, major, said, scripted } from "./ai-mocks.js";

const KEY = "a checkpoint key of at least thirty-two bytes";

// AI SDK messages of every role and content part that is plain JSON, as an app keeps a conversation.
const json = fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.parse(JSON.stringify(value)) as unknown);
const text = fc.string({ maxLength: 12 });
const id = fc.string({ minLength: 1, maxLength: 8 });
const providerOptions = fc.dictionary(fc.constantFrom("anthropic", "openai", "google"), fc.dictionary(id, json), {
  minKeys: 1,
  maxKeys: 2,
});
const withOptions = <T extends object>(arbitrary: fc.Arbitrary<T>) =>
  fc
    .tuple(arbitrary, fc.option(providerOptions, { nil: undefined }))
    .map(([value, options]) => (options === undefined ? value : { ...value, providerOptions: options }));
const textPart = withOptions(fc.record({ type: fc.constant("text"), text }));
const filePart = fc.record(
  {
    type: fc.constant("file"),
    data: fc.base64String({ maxLength: 16 }),
    mediaType: fc.constantFrom("image/png", "application/pdf"),
    filename: id,
  },
  { requiredKeys: ["type", "data", "mediaType"] },
);
const imagePart = fc.record({ type: fc.constant("image"), image: fc.webUrl() });
const reasoningPart = withOptions(fc.record({ type: fc.constant("reasoning"), text }));
const toolCallPart = withOptions(
  fc.record(
    { type: fc.constant("tool-call"), toolCallId: id, toolName: id, input: json, providerExecuted: fc.boolean() },
    { requiredKeys: ["type", "toolCallId", "toolName", "input"] },
  ),
);
const output = fc.oneof(
  fc.record({ type: fc.constantFrom("text", "error-text"), value: text }),
  fc.record({ type: fc.constantFrom("json", "error-json"), value: json }),
  fc.record({ type: fc.constant("execution-denied"), reason: text }, { requiredKeys: ["type"] }),
  fc.record({
    type: fc.constant("content"),
    value: fc.array(fc.record({ type: fc.constant("text"), text }), { maxLength: 2 }),
  }),
);
const toolResult = withOptions(fc.record({ type: fc.constant("tool-result"), toolCallId: id, toolName: id, output }));
const approvalResponse = fc.record(
  { type: fc.constant("tool-approval-response"), approvalId: id, approved: fc.boolean(), reason: text },
  { requiredKeys: ["type", "approvalId", "approved"] },
);
const message: fc.Arbitrary<ModelMessage> = fc.oneof(
  withOptions(fc.record({ role: fc.constant("system"), content: text })),
  withOptions(
    fc.record({
      role: fc.constant("user"),
      content: fc.oneof(text, fc.array(fc.oneof(textPart, filePart, imagePart), { minLength: 1, maxLength: 3 })),
    }),
  ),
  withOptions(
    fc.record({
      role: fc.constant("assistant"),
      content: fc.oneof(text, fc.array(fc.oneof(textPart, reasoningPart, toolCallPart, filePart), { maxLength: 4 })),
    }),
  ),
  withOptions(
    fc.record({
      role: fc.constant("tool"),
      content: fc
        .array(fc.tuple(toolResult, fc.array(approvalResponse, { maxLength: 1 })), { minLength: 1, maxLength: 3 })
        .map((results) => results.flatMap(([result, responses]) => [result, ...responses])),
    }),
  ),
) as fc.Arbitrary<ModelMessage>;

/** A model that answers "ok": the history is what is under test. */
const ok: LoopModel = { reply: async () => ({ text: "ok", toolCalls: [] }) };

describe(`AI SDK ${major} messages through a checkpoint`, () => {
  it("messages → checkpoint → messages is the identity", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(message, { minLength: 1, maxLength: 6 }), async (messages) => {
        const store = new MemoryCheckpointStore();
        const options = { checkpoints: store, checkpointKey: KEY };
        const history = fromModelMessages(messages);
        await runToolLoop(ok, new ToolRegistry(), history, { ...options, runId: "history", conversation: true });
        // recoverToolLoop reads the conversation back from its sealed checkpoint.
        const stored = await recoverToolLoop(ok, new ToolRegistry(), "history", options);
        if (stored.status !== "awaiting-user") throw new Error(`the conversation is ${stored.status}`);
        expect(toModelMessages(stored.messages.slice(0, history.length))).toEqual(messages);
      }),
      { numRuns: 60 },
    );
  });

  it("keeps binary content as base64 and a URL as its text", () => {
    const [user] = toModelMessages(
      fromModelMessages([
        {
          role: "user",
          content: [
            { type: "image", image: new Uint8Array([1, 2, 3]) },
            { type: "image", image: new URL("https://example.com/a.png") },
          ],
        },
      ]),
    );
    expect(user).toEqual({
      role: "user",
      content: [
        { type: "image", image: "AQID" },
        { type: "image", image: "https://example.com/a.png" },
      ],
    });
  });

  it("sends a reply's reasoning back with its signature, and a kept conversation as it was", async () => {
    const { model, prompts } = scripted([
      {
        content: [
          { type: "reasoning", text: "They want two.", providerMetadata: { anthropic: { signature: "sig-1" } } },
          { type: "text", text: "Holding." },
          { type: "tool-call", toolCallId: "c1", toolName: "hold", input: '{"seats":2}' },
        ],
        finishReason: finish("tool-calls"),
      },
      said("Held."),
    ]);
    const registry = new ToolRegistry().tool("hold", () => ({ held: 2 }));
    const earlier: ModelMessage[] = [
      { role: "user", content: [{ type: "text", text: "Hi" }], providerOptions: { openai: { cache: true } } },
      { role: "assistant", content: "Hello." },
    ];
    const result = await runToolLoop(
      aiSdkModel(model),
      registry,
      [...fromModelMessages(earlier), { role: "user", content: "Two seats" }],
      { checkpoints: new MemoryCheckpointStore() },
    );
    expect(result).toMatchObject({ status: "done", text: "Held." });
    const second = prompts[1]?.prompt as { role: string; content: unknown; providerOptions?: unknown }[];
    expect(second[0]).toMatchObject({ role: "user", providerOptions: { openai: { cache: true } } });
    expect(second[3]).toMatchObject({
      role: "assistant",
      content: [
        { type: "reasoning", text: "They want two.", providerOptions: { anthropic: { signature: "sig-1" } } },
        { type: "text", text: "Holding." },
        { type: "tool-call", toolCallId: "c1", toolName: "hold", input: { seats: 2 } },
      ],
    });
    expect(second[4]).toMatchObject({
      role: "tool",
      content: [{ type: "tool-result", toolCallId: "c1", output: { type: "json", value: { held: 2 } } }],
    });
  });
});
