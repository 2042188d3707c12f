import { readFileSync } from "node:fs";
import { InvalidInput } from "@durable/core";
import { Sealer } from "@durable/core/runner";
import { CommandLineError } from "@durable-apps/shared/command-line-error";
import { DEMO_KEY } from "@durable-apps/shared/store-url";

/** Where the viewer's key may come from. */
export interface KeySources {
  readonly key?: string | undefined;
  readonly keyFile?: string | undefined;
  /** The demo's runs: with no other key, the demo's. */
  readonly demo: boolean;
}

/**
 * The key the viewer verifies with: `--key`, else `--key-file`, else
 * `DURABLE_KEY`, else (only for the demo's runs) the demo's key. With none of
 * them it refuses: a guessed key makes every run read as corrupt.
 */
export function viewerKey(sources: KeySources): string {
  if (sources.key !== undefined && sources.keyFile !== undefined)
    throw new CommandLineError("Give --key or --key-file, not both.");
  const [key, from] =
    sources.key !== undefined
      ? [sources.key, "--key"]
      : sources.keyFile !== undefined
        ? [readKeyFile(sources.keyFile), `--key-file ${sources.keyFile}`]
        : process.env["DURABLE_KEY"] !== undefined
          ? [process.env["DURABLE_KEY"], "DURABLE_KEY"]
          : sources.demo
            ? [DEMO_KEY, "the demo's key"]
            : [undefined, ""];
  if (key === undefined) {
    throw new CommandLineError(
      "The viewer needs the key your workers seal with: give --key, --key-file or DURABLE_KEY (or --demo for the demo's runs).",
    );
  }
  try {
    Sealer.withKeys(key);
    return key;
  } catch (error) {
    if (error instanceof InvalidInput) throw new CommandLineError(`${from}: ${error.message}`);
    throw error;
  }
}

function readKeyFile(path: string): string {
  try {
    // A key file usually ends with a newline the key does not include.
    return readFileSync(path, "utf8").replace(/\r?\n$/, "");
  } catch (error) {
    throw new CommandLineError(
      `--key-file ${path} cannot be read (${(error as Error).message}): give the file that holds your workers' key.`,
    );
  }
}
