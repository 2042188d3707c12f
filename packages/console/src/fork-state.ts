import type { StandardSchemaV1 } from "@standard-schema/spec";
import { InvalidInput, type JsonValue } from "@durable/core";
import type { RunKind } from "@durable/core/store";
import { canonicalJson, isStandardSchema, type JsonObject, validateWith } from "@durable/core/runner";

/** The schemas of the flows' states, by flow name: what checks a state an operator edited before a fork. */
export type StateSchemas = Readonly<Record<string, StandardSchemaV1>>;

/** Checks the console's `schemas` option: an object whose every value is a Standard Schema (zod, valibot, …). */
export function checkSchemas(schemas: StateSchemas): void {
  for (const [name, schema] of Object.entries(schemas))
    if (!isStandardSchema(schema))
      throw new InvalidInput(
        `startConsole: schemas.${name} is not a Standard Schema (zod, valibot, arktype, …): give the flow's state schema.`,
      );
}

/** The run a fork is made of, as the console's edit of its state needs it. */
export interface ForkedRunOf {
  readonly name: string;
  readonly kind: RunKind;
}

/**
 * The program data a fork goes on with: the original's at the step
 * (`program`), with the flow's state `edited` to (parsed JSON; undefined for
 * no edit). A state the same as the original's, by its canonical JSON, is no
 * edit. An edit needs the flow's schema (`schemas[name]`), which must accept
 * it and give it back unchanged, as every flow's state must parse to itself;
 * a loop's data takes no edit. Each refusal is `InvalidInput`, before
 * anything is written.
 */
export async function editedProgram(
  schemas: StateSchemas,
  run: ForkedRunOf,
  program: JsonObject,
  edited: unknown,
): Promise<JsonObject> {
  if (edited === undefined) return program;
  if (run.kind !== "flow")
    throw new InvalidInput(`The run is a ${run.kind}: only a flow's state is edited for a fork. Fork it as it is.`);
  const text = canonicalJson(edited, "The state");
  if (text === canonicalJson(program["state"] ?? null)) return program;
  const schema = Object.hasOwn(schemas, run.name) ? schemas[run.name] : undefined;
  if (schema === undefined)
    throw new InvalidInput(
      `The console holds no schema for flow ${JSON.stringify(run.name)} (its schemas option), so it cannot check an edited state: fork with the state as it is, or start the console with the flow's state schema.`,
    );
  const parsed = await validateWith(schema, edited);
  if ("problems" in parsed)
    throw new InvalidInput(`The state is not valid for flow ${JSON.stringify(run.name)}: ${parsed.problems}.`);
  const again = canonicalJson(parsed.value, "The state as the schema gives it back");
  if (again !== text)
    throw new InvalidInput(
      `The state does not parse to itself with the schema of flow ${JSON.stringify(run.name)} (it gives back ${again.length <= 80 ? again : `${again.slice(0, 77)}...`}): a flow's state must, so write it as the schema gives it back.`,
    );
  return { ...program, state: JSON.parse(text) as JsonValue };
}
