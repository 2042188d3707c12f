import { InvalidInput } from "@durable/core";
import { checkRegistry, checkRunnerOptions, describeType } from "@durable/core/runner";

const ROLES: ReadonlySet<unknown> = new Set(["system", "user", "assistant", "tool"]);

/**
 * Checks what `runToolLoop` or `recoverToolLoop` is given before anything runs:
 * a model with `reply`, a tool registry, and the options (see
 * `checkRunnerOptions`). A wrong type is `InvalidInput` naming the argument
 * or option.
 */
export function checkLoopArgs(where: string, model: unknown, registry: unknown, options: unknown): void {
  if (typeof (model as { reply?: unknown } | null | undefined)?.reply !== "function") {
    throw new InvalidInput(`${where} takes a model with a reply(messages, tools) method (for example aiSdkModel(…)), not ${describeType(model)}.`);
  }
  checkRegistry(where, registry);
  checkRunnerOptions(where, options);
}

/** Checks the history a new loop starts from: a list of messages, each with a known role and a string content. */
export function checkMessages(where: string, messages: unknown): void {
  if (!Array.isArray(messages)) throw new InvalidInput(`${where}: messages must be a list of messages, not ${describeType(messages)}.`);
  messages.forEach((message: unknown, index) => {
    const { role, content } = (message ?? {}) as { role?: unknown; content?: unknown };
    if (!ROLES.has(role) || typeof content !== "string") {
      throw new InvalidInput(`${where}: messages[${index}] must be { role: "system" | "user" | "assistant" | "tool", content: string, … }.`);
    }
  });
}
