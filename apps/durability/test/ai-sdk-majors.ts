import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

// The loop crash tests run their children once per AI SDK major the loop's peer range names.
export const AI_SDK_MAJORS = [7, 6] as const;
export type AiSdkMajor = (typeof AI_SDK_MAJORS)[number];

const AI_SDK_6 = fileURLToPath(new URL("./ai-sdk-6.mjs", import.meta.url));

/** Node's arguments that run the TypeScript `child` with AI SDK `major`. */
export const childArgs = (major: AiSdkMajor, child: string): string[] =>
  major === 6 ? ["--import", "tsx", "--import", AI_SDK_6, child] : ["--import", "tsx", child];

/** The lines of the effects file in `dir` that start with `what` (each a real run of the model or the tool). */
export const effects = (dir: string, what: "model" | "tool"): string[] =>
  readFileSync(join(dir, "effects"), "utf8")
    .split("\n")
    .filter((line) => line.startsWith(what));

/** The model interface of `major`'s mock: the children write it on each model line, so a test sees which ran. */
export const mockVersion = (major: AiSdkMajor): string => (major === 6 ? "model v3 " : "model v4 ");
