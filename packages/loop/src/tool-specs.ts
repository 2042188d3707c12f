import { InvalidInput, type ToolRegistry } from "@durable/core";
import { canonicalCopy, type JsonObject } from "@durable/core/runner";
import type { ToolSpec } from "./model.js";

/**
 * What the model is told of each tool: its name, description, and the JSON
 * Schema of its arguments: `parameters` as given, else its `args` schema's
 * own JSON Schema (draft-07) when the schema converts (`~standard.jsonSchema`:
 * zod 4, valibot, arktype). Checked once, when the loop is set up.
 */
export function toolSpecs(registry: ToolRegistry): ToolSpec[] {
  return registry.list().map(({ name, description, parameters, args }) => {
    const schema = parameters ?? (args === undefined ? undefined : jsonSchemaOf(name, args));
    return {
      name,
      ...(description === undefined ? {} : { description }),
      ...(schema === undefined ? {} : { parameters: schema }),
    };
  });
}

function jsonSchemaOf(tool: string, args: object): JsonObject | undefined {
  const converter = (args as { "~standard": { jsonSchema?: { input(options: { target: string }): unknown } } })[
    "~standard"
  ].jsonSchema;
  if (converter === undefined) return undefined;
  try {
    return canonicalCopy(converter.input({ target: "draft-07" }), `the JSON Schema of ${tool}'s args`) as JsonObject;
  } catch (error) {
    throw new InvalidInput(
      `Tool ${JSON.stringify(tool)}: its args schema does not convert to JSON Schema; give the tool parameters instead.`,
      { cause: error },
    );
  }
}
