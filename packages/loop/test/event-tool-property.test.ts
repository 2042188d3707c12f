import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MemoryCheckpointStore, RunAlreadyEnded, sendEvent, ToolRegistry } from "@durable/core";
import { type LoopModel, type Message, recoverToolLoop, runToolLoop, type ToolCallRequest } from "../src/index.js";

// For any script of waits and any order of sends (resends among them) and recoveries, the model sees each event at
// most once, and the events of a name it saw are the first ones sent of that name; once enough came, the loop ends.

const KEY = "loop-tests-key-0123456789abcdef-xyz";
const NAMES = ["a", "b"] as const;

/** A model whose reply n waits for the events `rounds[n]` names (one call each), then answers; it keeps what it saw. */
function waiting(rounds: readonly (readonly string[])[], seen: { tools: Message[] }): LoopModel {
  return {
    async reply(messages) {
      seen.tools = messages.filter((message) => message.role === "tool");
      const round = messages.filter((message) => message.role === "assistant").length;
      const toolCalls: ToolCallRequest[] = (rounds[round] ?? []).map((event, index) => ({
        id: `${round}-${index}`,
        name: "wait_for_event",
        args: { event },
      }));
      return { text: toolCalls.length === 0 ? "done" : "", toolCalls };
    },
  };
}

const round = fc.array(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 2 });
const action = fc.oneof(
  fc.record({ send: fc.constantFrom(...NAMES), key: fc.integer({ min: 0, max: 5 }) }),
  fc.constant({ recover: true as const }),
);

describe("the loop's event tools, for any order of sends and recoveries", () => {
  it("each event is seen by the model at most once, and those of a name are its first ones sent", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(round, { maxLength: 4 }),
        fc.array(action, { maxLength: 12 }),
        async (rounds, actions) => {
          const store = new MemoryCheckpointStore();
          const storage = { checkpoints: store, checkpointKey: KEY, runId: "p" };
          const options = { checkpoints: store, checkpointKey: KEY, eventTools: { wait_for_event: { events: NAMES } } };
          const seen = { tools: [] as Message[] };
          const model = waiting(rounds, seen);
          const registry = new ToolRegistry();
          let result = await runToolLoop(model, registry, [], { ...options, runId: "p" });
          // The events the inbox holds of each name, in the order sent (a resend under a key already there adds none).
          const sent = new Map<string, string[]>(NAMES.map((name) => [name, []]));
          for (const each of actions) {
            if ("recover" in each) {
              // A loop that ended is not recovered (CheckpointConflict): its events are refused instead.
              if (result.status !== "done") result = await recoverToolLoop(model, registry, "p", options);
              continue;
            }
            const key = `k${each.key}`;
            try {
              const send = await sendEvent({ ...storage, name: each.send, payload: key, idempotencyKey: key });
              if (send.status === "sent") sent.get(each.send)?.push(key);
            } catch (error) {
              if (!(error instanceof RunAlreadyEnded)) throw error;
            }
          }
          // Then enough new events for every wait of the script: the loop ends, each wait answered.
          for (const name of NAMES)
            for (const [index] of rounds
              .flat()
              .filter((each) => each === name)
              .entries()) {
              const key = `${name}-${index}`;
              const send = await sendEvent({ ...storage, name, payload: key, idempotencyKey: key }).catch(
                (error: unknown) => (error instanceof RunAlreadyEnded ? undefined : Promise.reject(error)),
              );
              if (send?.status === "sent") sent.get(name)?.push(key);
            }
          if (result.status !== "done") result = await recoverToolLoop(model, registry, "p", options);
          expect(result).toMatchObject({ status: "done" });
          const answers = seen.tools.map((message) => message.content);
          expect(answers).toHaveLength(rounds.flat().length);
          expect(new Set(answers).size).toBe(answers.length);
          for (const name of NAMES) {
            const keys = sent.get(name) ?? [];
            const got = answers.filter((answer) => keys.includes(answer));
            expect(new Set(got)).toEqual(new Set(keys.slice(0, got.length)));
          }
          // Every answer is an event sent: no wait timed out or was refused.
          expect(answers.every((answer) => [...sent.values()].some((keys) => keys.includes(answer)))).toBe(true);
        },
      ),
      { numRuns: 60 },
    );
  });
});
