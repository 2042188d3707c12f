import { InvalidInput } from "../base/errors.js";
import { describeType, isObject } from "../base/option-checks.js";
import type { CheckpointStore } from "./contract.js";

/** The methods every `CheckpointStore` has. */
const STORE_METHODS = [
  "save",
  "latest",
  "listUnfinished",
  "delete",
  "recordCall",
  "calls",
  "renew",
  "release",
  "leaseOf",
] as const;

/** Checks that `store` has every method of the `CheckpointStore` protocol. */
export function checkStore(where: string, store: unknown): asserts store is CheckpointStore {
  const missing = isObject(store)
    ? STORE_METHODS.filter((method) => typeof store[method] !== "function")
    : STORE_METHODS;
  if (missing.length > 0) {
    throw new InvalidInput(
      `${where}: checkpoints must be a CheckpointStore (for example new SQLiteCheckpointStore(path)), not ${describeType(store)}` +
        `${isObject(store) ? ` without ${missing.join(", ")}` : ""}.`,
    );
  }
}
