import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as root from "@durable/core";
import * as internal from "@durable/core/internal";
import * as runner from "@durable/core/runner";
import * as store from "@durable/core/store";

// One entry point per audience. The same class must be one class whichever entry
// it came from, or a store's CheckpointConflict would not be the one an application catches.
const ENTRIES = {
  "@durable/core": "index",
  "@durable/core/store": "store",
  "@durable/core/runner": "runner",
  "@durable/core/internal": "internal",
} as const;
type Entry = keyof typeof ENTRIES;
const modules: Record<Entry, Record<string, unknown>> = {
  "@durable/core": root,
  "@durable/core/store": store,
  "@durable/core/runner": runner,
  "@durable/core/internal": internal,
};

const source = (file: string) => readFileSync(new URL(`../src/${file}.ts`, import.meta.url), "utf8");
const withoutComments = (text: string) => text.replace(/^\s*\/\/.*$/gm, "").trim();
/** The names in `{ … }` lists, without `type` and before any `as`. */
const listed = (list: string) =>
  list
    .split(",")
    .map(
      (item) =>
        item
          .trim()
          .replace(/^type\s+/, "")
          .split(/\s+as\s+/)[0]!,
    )
    .filter((name) => name !== "");
/** Every name an entry exports, types included, read from its source. */
const exported = (entry: Entry) =>
  new Set([...source(ENTRIES[entry]).matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)].flatMap((m) => listed(m[1]!)));
const runtimeNames = (entry: Entry) => new Set(Object.keys(modules[entry]));
const both = (a: Set<string>, b: Set<string>) => [...a].filter((name) => b.has(name)).sort();

describe("entry points", () => {
  it.each(Object.values(ENTRIES))("src/%s.ts only re-exports", (file) => {
    const statements = withoutComments(source(file))
      .split(/;\s*/)
      .filter((s) => s !== "");
    for (const statement of statements)
      expect(statement).toMatch(/^export (type )?\{[^}]*\} from "\.\/[\w-]+\/[\w-]+\.js"$/);
  });

  it("the store entry shares only the error classes with the root, and they are the root's own", () => {
    const shared = both(runtimeNames("@durable/core"), runtimeNames("@durable/core/store"));
    expect(shared).toEqual([
      "CheckpointConflict",
      "CheckpointNotFound",
      "CheckpointStoreCorrupt",
      "DurableError",
      "InvalidInput",
      "LeaseHeld",
      "QueueFull",
      "RunAlreadyEnded",
      "StoreNotReady",
      "StoreUnavailable",
    ]);
    // biome-ignore lint/performance/noDynamicNamespaceImportAccess: the test compares every shared export by name
    for (const name of shared) expect(store[name as keyof typeof store]).toBe(root[name as keyof typeof root]);
    expect(new store.CheckpointConflict("r", "taken.")).toBeInstanceOf(root.DurableError);
  });

  // What an application writes, name by name: adding one is a choice, made here.
  const ROOT = [
    ...["DurableError", "CheckpointNotFound", "CheckpointConflict", "CheckpointStoreCorrupt", "RecoveryNeedsDecision"],
    ...["IdentityMismatch", "InvalidInput", "InvalidToolArgs", "UnrecordableResult", "ApprovalDenied"],
    ...["StoreUnavailable", "StoreNotReady", "LeaseHeld", "RunAlreadyEnded", "ToolFailed", "ToolTimedOut"],
    ...["NonRetryable", "RunFailed", "ResultTimedOut", "PatchRemoved"],
    ...["DurableErrorCode", "InDoubtCall"],
    ...["ToolRegistry", "ToolFn", "ToolOptions", "ToolContext", "RetryPolicy", "Executor", "ExecutorOptions"],
    ...["ApprovalAnswer", "ApprovalAnswers", "ApprovalPort", "ApprovalRequest", "idempotencyKey"],
    ...[
      "approveRun",
      "decideInDoubt",
      "retryRun",
      "cancelRun",
      "wakeRun",
      "forkRun",
      "ForkOptions",
      "ForkedRun",
      "pruneRuns",
      "PruneOptions",
      "sendEvent",
      "SendEventOptions",
      "SentEvent",
      "OperatorOptions",
      "InDoubtDecision",
      "InDoubtDecisions",
    ],
    ...["DurableEvent", "EventOf", "EventSink", "jsonlEventSink", "readJsonlEvents"],
    ...["PausedResult", "RecoverOptions", "PendingCall"],
    ...["RunWorker", "startWorker", "WorkerOptions", "WorkerStatus", "WorkerLogger", "workerId", "LeaseOptions"],
    ...["Schedule", "ScheduleOptions"],
    ...["drain", "DrainOptions", "DrainResult"],
    ...["defineQueue", "Queue", "QueueOptions", "QueueFull"],
    ...["followRun", "FollowOptions", "FollowedPart", "StreamOptions", "StreamTooLong"],
    ...["RunVersion", "VersionNotServed", "migrateRun", "runsByVersion"],
    ...["RunHandle", "runHandle", "RunHandleOptions", "RunHandleStatus"],
    ...["MemoryCheckpointStore", "CheckpointStore", "StorageOptions", "CheckpointKeys", "EncryptionKeys"],
    ...["Identity", "newRunId", "JsonValue", "ValueCodec"],
  ];

  // 69 since events and schedules: a webhook handler sends an event (`sendEvent`) and branches on `RunAlreadyEnded`;
  // an operator wakes a run (`wakeRun`); an application passes a `Schedule` to its worker and may write its `ScheduleOptions` apart.
  // 75 since handles: a web server keeps a `RunHandle` (or rebuilds one, `runHandle`, with its options and the status it
  // reads) and branches on how its `result()` rejects (`RunFailed`, `ResultTimedOut`).
  // 78 since drains: a serverless route handler calls `drain` with its options and reads what it did.
  // 82 since queues: an application defines a queue with its limits (`defineQueue`, `Queue`, `QueueOptions`) and a
  // caller that claims by hand branches on `QueueFull`.
  // 87 since streams: a route handler follows a run's stream (`followRun`, its options and parts), an application sets
  // how a run streams (`StreamOptions`), and a follower branches on `StreamTooLong`.
  // 95 since versions, patches and forks: a definition names its `RunVersion`, a deployment counts the runs left of
  // each (`runsByVersion`) and moves one (`migrateRun`), and a caller that recovers by hand branches on
  // `VersionNotServed`; an application that changes a flow's code in place branches on `PatchRemoved`; an operator
  // (a console's "fork from this step") forks a run (`forkRun`, its options) and reads where the fork stands (`ForkedRun`).
  // 96 since telemetry: a service gives its worker its own logger (`WorkerLogger`).
  it(`the root exports what an application writes: these ${ROOT.length} names, at most 96`, () => {
    expect([...exported("@durable/core")].sort()).toEqual([...ROOT].sort());
    expect(ROOT.length).toBeLessThanOrEqual(96);
  });

  it("the store, runner and internal entries export these names", () => {
    expect([...exported("@durable/core/store")].sort()).toMatchInlineSnapshot(`
      [
        "ASLEEP",
        "AnchoredHead",
        "CallColumns",
        "CallPosition",
        "CheckpointColumns",
        "CheckpointConflict",
        "CheckpointNotFound",
        "CheckpointRow",
        "CheckpointStore",
        "CheckpointStoreCorrupt",
        "DurableError",
        "EventColumns",
        "HeadColumns",
        "InvalidInput",
        "Lease",
        "LeaseClaim",
        "LeaseHeld",
        "LeaseTerms",
        "LeaseView",
        "ListOptions",
        "MAX_BATCH_WRITES",
        "MAX_EVENT_KEY_LENGTH",
        "MAX_OWNER_LENGTH",
        "MAX_QUEUE_KEY_LENGTH",
        "MAX_QUEUE_NAME_LENGTH",
        "MAX_RATE_WINDOW_MS",
        "MAX_RUN_PAGE",
        "MAX_STREAM_BATCH",
        "MAX_STREAM_PAGE",
        "MemoryRunAnchor",
        "QueueCounts",
        "QueueFull",
        "QueuePlace",
        "QueuedRun",
        "ResolvedRunQuery",
        "RunAlreadyEnded",
        "RunAnchor",
        "RunHead",
        "RunKind",
        "RunPage",
        "RunPosition",
        "RunQuery",
        "RunStatus",
        "RunSummary",
        "RunWrite",
        "SAVE_RENEWS_AFTER",
        "StoreNotReady",
        "StoreOperation",
        "StoreUnavailable",
        "StoredCall",
        "StoredCheckpoint",
        "StoredEvent",
        "StoredStreamBatch",
        "StreamBatch",
        "StreamColumns",
        "UNFINISHED",
        "WAITING",
        "atOrAfter",
        "checkBatch",
        "checkEvent",
        "checkInboxFrom",
        "checkLeaseTerms",
        "checkQueuePlace",
        "checkRunQuery",
        "checkStreamBatch",
        "checkStreamFrom",
        "checkedCall",
        "checkedCheckpoint",
        "checkedEvent",
        "checkedHead",
        "checkedStreamBatch",
        "claimRefusal",
        "closedWhileUsed",
        "commitRefusal",
        "eventRefusal",
        "holdsSlot",
        "isAnchoredHead",
        "isAsleepOwner",
        "isClaimable",
        "isEnded",
        "isStart",
        "isTake",
        "leaseAfterSave",
        "malformedColumn",
        "matchesRunQuery",
        "mergeHeads",
        "newestFirst",
        "queueOrder",
        "queuePlaceJson",
        "queueRefusal",
        "recordRefusal",
        "renewRefusal",
        "runCursor",
        "runPage",
        "saveRefusal",
        "streamPage",
        "streamRefusal",
        "wholeNumber",
      ]
    `);
    expect([...exported("@durable/core/runner")].sort()).toMatchInlineSnapshot(`
      [
        "AnchoredStore",
        "AsleepResult",
        "BoundAnswer",
        "CHILD_TOOL",
        "CallDone",
        "CallEntry",
        "CallFailed",
        "CallLog",
        "CallOutcome",
        "CallRecord",
        "CallRecordKind",
        "CallRef",
        "CallRetrying",
        "CallScope",
        "CallScopeInit",
        "CallStarted",
        "ChainLink",
        "CheckpointBody",
        "CheckpointSaved",
        "ChildEnd",
        "ChildStart",
        "ClaimLanded",
        "ClaimOptions",
        "Classification",
        "DriverOptions",
        "DurableRun",
        "EVENT_TOOL",
        "EventInput",
        "EventStore",
        "EventWait",
        "FinishedCall",
        "FinishedOutcome",
        "ForkedFrom",
        "InboxEvent",
        "JsonObject",
        "LeaseKeeper",
        "LoopStage",
        "MAX_ERROR_TEXT",
        "MAX_NAME_LENGTH",
        "MAX_RUN_ID_LENGTH",
        "MAX_SLEEP_MS",
        "OpenedCheckpoint",
        "OpenedRun",
        "OperatorAction",
        "OperatorMark",
        "OptionCheck",
        "OptionTable",
        "OptionType",
        "PATCH_TOOL",
        "PLAIN_JSON",
        "ParentRef",
        "QueueStart",
        "RECOVER_EACH_OPTIONS",
        "RECOVER_OPTIONS",
        "RUNNER_OPTIONS",
        "RecoverEachOptions",
        "Recovered",
        "ReplayPlan",
        "RoundWait",
        "RunAsleep",
        "RunAttributes",
        "RunCancelled",
        "RunDriver",
        "RunEnded",
        "RunEnvelope",
        "RunNeedsDecision",
        "RunPaused",
        "RunProgram",
        "RunRecovered",
        "RunStart",
        "RunTrace",
        "RunnerOptions",
        "SLEEP_TOOL",
        "ScheduleTarget",
        "SealPurpose",
        "SealedColumns",
        "Sealer",
        "SegmentCounts",
        "ServedRuns",
        "Settled",
        "StepContext",
        "StepOutcome",
        "SteppedData",
        "StreamPart",
        "StreamStore",
        "StreamTerms",
        "StreamWriter",
        "VersionRuns",
        "WaitOptions",
        "anchoredStore",
        "assertEventName",
        "assertJson",
        "assertRunId",
        "assertRunName",
        "assertStorableText",
        "bindAnswers",
        "callIdOf",
        "canonicalCopy",
        "canonicalJson",
        "checkExecutor",
        "checkOptions",
        "checkPatchesAsked",
        "checkRegistry",
        "checkRunVersion",
        "checkRunnerOptions",
        "childRunId",
        "classifyCalls",
        "decodeValue",
        "deepFreeze",
        "describeType",
        "driverOptions",
        "eachConcurrently",
        "emit",
        "encodeValue",
        "encodedText",
        "envelopeJson",
        "errorText",
        "eventOfLine",
        "eventStore",
        "freshPlan",
        "idempotencyKeyFor",
        "identityOf",
        "inSpan",
        "isArrayOf",
        "isCount",
        "isJsonObject",
        "isRecordOf",
        "isSegmentCounts",
        "isStandardSchema",
        "isString",
        "leaseTerms",
        "leavesRunForRecovery",
        "openCheckpoint",
        "openHistory",
        "openStreamBatch",
        "operatorMark",
        "planReplay",
        "queuePlace",
        "readCallLog",
        "readEnvelope",
        "readInbox",
        "readLatest",
        "resumeIdentity",
        "runAttributes",
        "runStorage",
        "sealCheckpoint",
        "sealEvent",
        "sealerFor",
        "streamStore",
        "streamTerms",
        "unknownOption",
        "validateWith",
        "validated",
        "versionCounts",
      ]
    `);
    expect([...exported("@durable/core/internal")].sort()).toEqual(
      ["faultPoint", "parseFaultPoint", "FAULT_POINTS", "FAULT_POINT_VARIABLE", "FaultPoint", "ArmedFaultPoint"]
        .concat(["MemoryData", "MemoryRun", "MemoryStoreOptions"])
        .sort(),
    );
  });

  it("the runner and internal entries share no name with the root or the store entry, types included", () => {
    expect(both(exported("@durable/core/internal"), exported("@durable/core"))).toEqual([]);
    expect(both(exported("@durable/core/internal"), exported("@durable/core/runner"))).toEqual([]);
    const names = exported("@durable/core/runner");
    expect(both(names, exported("@durable/core"))).toEqual([]);
    expect(both(names, exported("@durable/core/store"))).toEqual([]);
  });

  it("the root leaves out what only runners and stores use", () => {
    const names = exported("@durable/core");
    for (const internal of [
      "DurableRun",
      "CallScope",
      "freshPlan",
      "planReplay",
      "bindAnswers",
      "faultPoint",
      "Sealer",
      "saveRefusal",
      "recordRefusal",
      "isEnded",
    ]) {
      expect(names.has(internal), internal).toBe(false);
    }
  });

  it("every name a README imports from core is exported by the entry it names, and the core README's example uses the root only", () => {
    const readmes = [
      "../README.md",
      "../../flow/README.md",
      "../../store-sqlite/README.md",
      "../../conformance/README.md",
      "../../../README.md",
    ];
    for (const path of readmes) {
      const text = readFileSync(new URL(path, import.meta.url), "utf8");
      for (const m of text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+"(@durable\/core[^"]*)"/g)) {
        const entry = m[2] as Entry;
        expect(Object.keys(ENTRIES), `${path} imports ${entry}`).toContain(entry);
        for (const name of listed(m[1]!))
          expect(exported(entry).has(name), `${path}: ${name} from ${entry}`).toBe(true);
      }
    }
    const core = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    expect(core).toMatch(/from "@durable\/core";/);
    expect(core).not.toMatch(/from "@durable\/core\/(store|runner)"/);
  });
});
