import { asSchema, type Tool, type ToolSet } from "ai";
import { InvalidInput, type ToolContext, type ToolOptions, ToolRegistry } from "@durable/core";
import { canonicalCopy, checkOptions, isStandardSchema, type JsonObject, type OptionTable } from "@durable/core/runner";
import { loopCallContext } from "../call-context.js";
import { toModelMessages } from "./messages.js";

/** How the durable loop treats a tool, besides what the AI SDK tool says of itself. */
export type DurableToolOptions = Pick<ToolOptions, "idempotent" | "approval" | "retry" | "timeoutMs">;

// Each is checked by the registry too; checked here first, for a message that names durableTools.
const DURABLE_TOOL_OPTIONS: OptionTable<DurableToolOptions> = {
  idempotent: "boolean",
  approval: "boolean",
  retry: "object",
  timeoutMs: true,
};

const DURABLE: unique symbol = Symbol.for("@durable/loop/ai-sdk.options");

/** An AI SDK tool with durable options riding along. */
export type DurableTool<T extends Tool> = T & { readonly [DURABLE]: DurableToolOptions };

/**
 * Marks an AI SDK tool with how the durable loop treats it:
 * `durable(tool({ … }), { idempotent: true, retry: { attempts: 3 } })`.
 * The tool itself is unchanged.
 */
export function durable<T extends Tool>(aiTool: T, options: DurableToolOptions): DurableTool<T> {
  checkOptions("durable", options, DURABLE_TOOL_OPTIONS);
  return { ...aiTool, [DURABLE]: options };
}

/**
 * The loop's registry for an AI SDK `ToolSet`, as you give it to
 * `generateText`: each `tool({ description, inputSchema, execute })` keeps its
 * name, description and schema (zod, any Standard Schema, or `jsonSchema()`:
 * the arguments are validated before the call is recorded, and a refusal goes
 * back to the model), and `execute` runs through the call log with the
 * model's `toolCallId`, the history as AI SDK `messages`, and an
 * `abortSignal` that fires on the tool's timeout or when the worker gives the
 * run up. `needsApproval: true` pauses for an approval, as `approval: true`
 * does. Durable options come from `durable(…)` on the tool, or from
 * `options`, by tool name (checked at compile time).
 *
 * A tool without `execute` (the client runs it), a provider-defined tool, or
 * `needsApproval` as a function is `InvalidInput`: the loop runs every call
 * itself and decides approvals per tool. `toModelOutput` is not applied: a
 * result reaches the model as JSON (a string as text).
 */
export function durableTools<TOOLS extends ToolSet>(
  tools: TOOLS,
  options: { readonly [NAME in keyof TOOLS]?: DurableToolOptions } = {},
): ToolRegistry {
  if (typeof tools !== "object" || tools === null) throw new InvalidInput("durableTools takes an AI SDK ToolSet.");
  for (const [name, given] of Object.entries(options)) {
    if (!Object.hasOwn(tools, name))
      throw new InvalidInput(`durableTools: options name ${JSON.stringify(name)}, which is not a tool of the set.`);
    if (given !== undefined) checkOptions(`durableTools: tool ${JSON.stringify(name)}`, given, DURABLE_TOOL_OPTIONS);
  }
  const registry = new ToolRegistry();
  for (const [name, aiTool] of Object.entries(tools))
    registry.tool(name, executeOf(name, aiTool), {
      ...toolOptions(name, aiTool),
      ...(aiTool as Partial<DurableTool<Tool>>)[DURABLE],
      ...options[name],
    });
  return registry;
}

function toolOptions(name: string, aiTool: Tool): ToolOptions<unknown> {
  const where = `durableTools: tool ${JSON.stringify(name)}`;
  const type = (aiTool as { type?: string }).type;
  if (type !== undefined && type !== "function" && type !== "dynamic")
    throw new InvalidInput(`${where} is a ${type} tool: the provider runs it, not the durable loop.`);
  const { needsApproval } = aiTool as { needsApproval?: unknown };
  if (needsApproval !== undefined && typeof needsApproval !== "boolean")
    throw new InvalidInput(`${where}: needsApproval must be true or false (the loop decides approvals per tool).`);
  const schema = asSchema(aiTool.inputSchema);
  const parameters = schema.jsonSchema;
  if (typeof (parameters as { then?: unknown }).then === "function")
    throw new InvalidInput(`${where}: its JSON Schema is a promise; give the loop a schema it can read at once.`);
  const { description } = aiTool;
  if (description !== undefined && typeof description !== "string")
    throw new InvalidInput(`${where}: its description must be a string (the loop has no context to make it from).`);
  return {
    ...(description === undefined ? {} : { description }),
    parameters: canonicalCopy(parameters, `${where}: its JSON Schema`) as JsonObject,
    args: argsSchema(aiTool.inputSchema, schema.validate),
    ...(needsApproval === true ? { approval: true } : {}),
  };
}

/** The tool's input schema as a Standard Schema: itself when it is one (zod, valibot), else around its `validate`. */
function argsSchema(given: unknown, validate: ((value: unknown) => unknown) | undefined): ToolOptions<unknown>["args"] {
  if (isStandardSchema(given)) return given;
  if (validate === undefined) return undefined;
  return {
    "~standard": {
      version: 1,
      vendor: "ai-sdk",
      validate: async (value) => {
        const result = (await validate(value)) as { success: true; value: unknown } | { success: false; error: Error };
        return result.success ? { value: result.value } : { issues: [{ message: result.error.message }] };
      },
    },
  };
}

function executeOf(name: string, aiTool: Tool): (args: unknown, ctx: ToolContext) => Promise<unknown> {
  const { execute } = aiTool;
  if (typeof execute !== "function")
    throw new InvalidInput(
      `durableTools: tool ${JSON.stringify(name)} has no execute: the durable loop runs every tool it offers the model.`,
    );
  return async (args, ctx) => {
    const call = loopCallContext();
    // AI SDK 6 and 7 name the app's context differently; the loop has none to give.
    const options = {
      toolCallId: call?.toolCallId ?? ctx.callId,
      messages: toModelMessages(call?.messages ?? []),
      abortSignal: ctx.signal,
    } as Parameters<NonNullable<Tool["execute"]>>[1];
    const output = execute(args, options);
    if (isAsyncIterable(output)) {
      // A streaming tool's last value is its result, as in the AI SDK.
      let last: unknown;
      for await (const value of output) last = value;
      return last;
    }
    return output;
  };
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === "object" && value !== null && Symbol.asyncIterator in value;
}
