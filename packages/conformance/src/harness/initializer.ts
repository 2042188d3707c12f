import type { CheckpointStore } from "@durable/core";
import { type OptionTable, unknownOption } from "@durable/core/runner";

/**
 * Reads and changes a stored row's bytes past the store's API, as an attacker
 * with write access to the database could. The tamper tests use it; the store
 * never sees it. `sealed` is the sealed envelope the store was given.
 */
export interface RawAccess {
  readCheckpoint(runId: string, step: number): Promise<string>;
  writeCheckpoint(runId: string, step: number, sealed: string): Promise<void>;
  readCall(runId: string, segment: number, seq: number): Promise<string>;
  writeCall(runId: string, segment: number, seq: number, sealed: string): Promise<void>;
  deleteCall(runId: string, segment: number, seq: number): Promise<void>;
  /** Removes one checkpoint row (the tamper group's "a change deleted from the middle"; skipped without it). */
  deleteCheckpoint?(runId: string, step: number): Promise<void>;
  /**
   * Sets one column of a stored row to `value`, of any type, as a bug or an
   * attacker could: the malformed-row cases use it. Columns go by the
   * protocol's names: a checkpoint's `status`, `segment`, `name`, `kind`,
   * `sealed`; a call record's `segment`, `seq`, `sealed`; the store's own head
   * of a run (where it keeps one beside its rows: a runs table, a meta hash)
   * `step`, `status`, `segment`, `name`, `kind` and `records` (how many records
   * its current segment holds). `null` removes the value. Resolves false when
   * the store keeps no such row or column, or its database cannot hold the
   * value there (a typed column refuses text, NOT NULL refuses null).
   */
  setColumn(row: RowRef, column: RowColumn, value: string | number | null): Promise<boolean>;
}

/** A stored row the raw oracle changes: a checkpoint, a call record, or the store's head of the run. */
export type RowRef =
  | { readonly kind: "checkpoint"; readonly runId: string; readonly step: number }
  | { readonly kind: "call"; readonly runId: string; readonly segment: number; readonly seq: number }
  | { readonly kind: "head"; readonly runId: string };

/** A column of a stored row, by the protocol's name (see `RawAccess.setColumn`). */
export type RowColumn = "step" | "status" | "segment" | "name" | "kind" | "sealed" | "seq" | "records";

/** What a store declares it can do; the kit skips a group, saying why, when its capability is not declared. */
export interface Capabilities<S extends CheckpointStore = CheckpointStore> {
  /**
   * Keys expire `ttlSeconds` after a run's last write, except while the run is
   * paused. The kit waits that long, so keep it small (1–2 s) in the initializer.
   */
  readonly ttl?: { readonly ttlSeconds: number };
  /**
   * Several processes may share the store: the crash and race groups open it
   * in child processes. `opener` is the URL (or absolute path) of a module whose
   * default export opens a store from a handle, `(handle: string) => store`;
   * `handle(store)` says what a child needs to open a store on the same data
   * (a file path, a prefix, a URL and table prefix). A TypeScript opener runs
   * through tsx, which must then be installed. Before the first child starts,
   * the kit follows the opener's imports and throws `StaleBuild` when a package
   * it loads built (`dist/`, not installed) is older than its `src/`.
   */
  readonly multiProcess?: MultiProcess<S>;
  /**
   * Another store on the same data as `store` (a second connection to the same
   * database, prefix or file), as another worker would open it, leaving `store`
   * open. The kit uses it for concurrent clients, and to reopen a closed store.
   */
  connect?(store: S): Promise<S>;
  /**
   * The store decides refusals from a plain head of its own (a runs row, a
   * meta hash) beside the sealed checkpoints: `endByHand` sets that head's
   * status to `done` past the store's API, leaving every sealed row as it is.
   */
  readonly plainHead?: { endByHand(store: S, runId: string): Promise<void> };
  /**
   * A `RunAnchor` in a second place (not the store under test) for the
   * anchor group: its contract, and the rollback and truncation attacks on
   * the store that it must catch.
   */
  readonly anchor?: AnchorCapability;
}

/** How the anchor group gets anchors: the test and its worker processes open them the same way. */
export interface AnchorCapability {
  /**
   * The URL (or absolute path) of a module whose default export opens an
   * anchor from a handle, `(handle: string) => anchor`.
   */
  readonly opener: string;
  /** The handle of a new, empty anchor, isolated from every other (a new file path, a new prefix). */
  newHandle(): string;
  /** Removes what the anchor of `handle` stored, once it is closed. */
  remove?(handle: string): void | Promise<void>;
}

/** How child processes open the store under test. */
export interface MultiProcess<S extends CheckpointStore = CheckpointStore> {
  readonly opener: string;
  handle(store: S): string;
}

/**
 * How the kit gets stores. Every `createStore()` must give a store isolated
 * from every other it gave (its own prefix, tables, schema or file), so groups
 * and tests never see each other's runs.
 */
export interface ConformanceInitializer<S extends CheckpointStore = CheckpointStore> {
  /** Names the store in test titles and summaries. */
  readonly name: string;
  /** A new, empty, isolated store. Called for every test, and twice in the isolation tests. */
  createStore(): S | Promise<S>;
  /** Disposes of a store made by `createStore` (close it, drop its prefix or file). Default: `store.close()`. */
  destroyStore?(store: S): void | Promise<void>;
  /** Runs once before the kit's tests (start a server, make a database). */
  beforeAll?(): void | Promise<void>;
  /** Runs once after the kit's tests. */
  afterAll?(): void | Promise<void>;
  readonly capabilities?: Capabilities<S>;
  /** The raw-access oracle for a store; without it, the integrity group is skipped. */
  raw?(store: S): RawAccess;
}

/**
 * Checks, at run time, that a value has the shape of an initializer, and says
 * what is wrong in words: one line per problem, none when it is fine.
 */
export function initializerProblems(value: unknown): string[] {
  if (typeof value !== "object" || value === null) {
    return ["The module must export an initializer object (export default { name, createStore, ... })."];
  }
  const init = value as Record<string, unknown>;
  const problems = unknownKeys(init, Object.keys(INITIALIZER_KEYS), "");
  if (typeof init["name"] !== "string" || init["name"].length === 0)
    problems.push("`name` must be a non-empty string.");
  if (typeof init["createStore"] !== "function")
    problems.push("`createStore` must be a function returning a new, isolated store.");
  for (const hook of ["destroyStore", "beforeAll", "afterAll", "raw"]) {
    if (init[hook] !== undefined && typeof init[hook] !== "function")
      problems.push(`\`${hook}\`, when given, must be a function.`);
  }
  const caps = init["capabilities"];
  if (caps !== undefined) {
    if (typeof caps !== "object" || caps === null) problems.push("`capabilities`, when given, must be an object.");
    else problems.push(...capabilityProblems(caps as Record<string, unknown>));
  }
  return problems;
}

// Every key of an initializer and of its capabilities, each once: a misspelled one is a problem, not ignored.
const INITIALIZER_KEYS: OptionTable<ConformanceInitializer> = {
  name: true,
  createStore: true,
  destroyStore: true,
  beforeAll: true,
  afterAll: true,
  capabilities: true,
  raw: true,
};
const CAPABILITIES: OptionTable<Capabilities> = {
  ttl: true,
  multiProcess: true,
  connect: true,
  plainHead: true,
  anchor: true,
};

/** A problem line for each key of `given` that is not `known`, naming the closest known one. */
function unknownKeys(given: Record<string, unknown>, known: readonly string[], path: string): string[] {
  return Object.keys(given)
    .filter((key) => !known.includes(key))
    .map((key) => `${path === "" ? "" : `\`${path}\`: `}${unknownOption(key, known)}`);
}

function capabilityProblems(caps: Record<string, unknown>): string[] {
  const problems = unknownKeys(caps, Object.keys(CAPABILITIES), "capabilities");
  const ttl = caps["ttl"] as { ttlSeconds?: unknown } | undefined;
  if (ttl !== undefined && !(typeof ttl?.ttlSeconds === "number" && ttl.ttlSeconds > 0)) {
    problems.push("`capabilities.ttl.ttlSeconds` must be a positive number.");
  }
  const multi = caps["multiProcess"] as { opener?: unknown; handle?: unknown } | undefined;
  if (multi !== undefined && !(typeof multi?.opener === "string" && typeof multi.handle === "function")) {
    problems.push(
      "`capabilities.multiProcess` must be { opener: <URL of a module whose default export opens a store from a handle>, handle: (store) => string }.",
    );
  }
  const head = caps["plainHead"] as { endByHand?: unknown } | undefined;
  if (head !== undefined && typeof head?.endByHand !== "function") {
    problems.push("`capabilities.plainHead` must be { endByHand: (store, runId) => Promise<void> }.");
  }
  const anchor = caps["anchor"] as { newHandle?: unknown; opener?: unknown } | undefined;
  if (anchor !== undefined && !(typeof anchor?.newHandle === "function" && typeof anchor.opener === "string")) {
    problems.push(
      "`capabilities.anchor` must be { opener: <URL of a module whose default export opens an anchor from a handle>, newHandle: () => string, remove?: (handle) => void }.",
    );
  }
  if (caps["connect"] !== undefined && typeof caps["connect"] !== "function") {
    problems.push("`capabilities.connect` must be a function (store) => Promise<store>.");
  }
  return problems;
}

/** Checks a value is an initializer, throwing a `TypeError` that lists every problem. */
export function assertInitializer(value: unknown): ConformanceInitializer {
  const problems = initializerProblems(value);
  if (problems.length > 0) throw new TypeError(`Not a conformance initializer:\n- ${problems.join("\n- ")}`);
  return value as ConformanceInitializer;
}
