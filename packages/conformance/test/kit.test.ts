import { describe, expect, it } from "vitest";
import {
  GROUPS,
  failingCases,
  initializerProblems,
  runConformance,
  type ConformanceInitializer,
  type GroupName,
} from "../src/index.js";
import * as broken from "./broken-stores.js";
import { expiringMemory, ttlOnPaused, ttlOnRunning } from "./expiring-stores.js";
import * as leases from "./lease-stores.js";
import * as events from "./event-stores.js";
import * as queues from "./queue-stores.js";
import * as forks from "./fork-stores.js";

const { memory } = broken;

// The reference store passes every group, its expiring fork the ttl group, and the lease fork the lease group
// (so the lease bugs below, each a switch of that fork, are the only ones).
runConformance(memory);
runConformance(expiringMemory, { groups: ["ttl"] });
runConformance(leases.leaseKeepingMemory, { groups: ["lease", "timers"] });

/** [store, the group that must catch it, the case that does, what its message must say: the operation and the expectation]. */
type Caught = [ConformanceInitializer, GroupName, string, string];

const SAVE_REFUSALS = "refuses step 0 again, a skipped step and a step already taken";
const LIST = "listUnfinished gives the running and paused runs of that flow only, each once";
const DELETE = "delete removes the run's checkpoints and call records and touches no other run";
const NUMBERING =
  "keeps every record, numbered and in order, across 12 segments and past seq 9, and reads them from any place";
const CLAIM = "refuses a record from an older segment after a claim, and one from a segment not yet claimed";
const LIVE_LEASE =
  "a live lease refuses another owner's claim with LeaseHeld naming the owner and the expiry, writing nothing";
const LEASE_CLOCK = "a lease runs out by the store's clock, not by the worker's Date.now";
const RENEWAL = "only the owner renews a lease, and its renewal extends it";
const TTL =
  "an ended run's checkpoints and records are gone after the TTL; a running run's (its worker died mid-call) and a paused run's stay, until each ends";
const BATCH_AFTER_DONE =
  "refuses a record after the batch's own checkpoint ended the run with CheckpointConflict, and writes nothing of the batch";
const ORDER =
  "listQueued gives a queue's claimable runs highest priority first, FIFO within a priority, once each and no other queue's; the claimable listing leaves queued runs out";
const CONCURRENCY =
  "a take beyond the queue's concurrency is QueueFull and writes nothing; a run that ends, sleeps, waits, pauses or lets its lease run out frees its slot, and renewing a lease that ran out is a take";
const PER_KEY =
  "a take beyond the per-key limit of the run's concurrency key is QueueFull (key); runs of other keys and of none go on";
const RATE =
  "a queue starts at most its rate limit of runs in any window by the store's clock (QueueFull rate, with when to try again); later takes of a started run are not starts";
const STEP_ZERO =
  "the place a run's step 0 gave holds for its life: takes whose rows name no queue (as a runner saves a claim) or another one are held to its limits";
const QUEUE_RACE =
  "8 racing workers take a queue's 24 runs: never more than its concurrency (3) hold one at once, and every run ends";
const FORK_OWN =
  "a fork's rows, records and events are its own, read back and verified under its id, and listed by its name; the original's are unchanged byte for byte";
const FORK_DELETE = "delete of the original leaves the fork whole, and delete of a fork leaves its original whole";
const CAUGHT: Caught[] = [
  [
    broken.batchOneByOne,
    "batch",
    "refuses a gap in the records after good ones with CheckpointConflict, and writes nothing of the batch",
    "the run after commit(runId, …) with a gap in the records after good ones: expected exactly what it held before",
  ],
  [
    broken.batchCheckedAgainstHead,
    "batch",
    BATCH_AFTER_DONE,
    "commit(runId, …) with a record after the batch's own checkpoint ended the run: expected CheckpointConflict",
  ],
  [broken.noCompareAndSet, "save", SAVE_REFUSALS, "save(runId, 0) of a run at step 2: expected CheckpointConflict"],
  [
    broken.noCompareAndSet,
    "save",
    "lets exactly one of 8 clients saving the same step at once win",
    "8 concurrent save(runId, 1)",
  ],
  [
    broken.saveIgnoresFlowAndKind,
    "save",
    "refuses a save for another flow's or another kind's run",
    'save(runId, 1) of flow "refunds" on a run of flow "tickets": expected CheckpointConflict',
  ],
  [
    broken.saveTakesLowerSegment,
    "save",
    "refuses a save from a segment older than the run's",
    "save(runId, 2) from segment 0 after step 1 claimed segment 1: expected CheckpointConflict",
  ],
  [
    broken.saveNotAtomic,
    "save",
    "lets exactly one of 8 clients saving the same step at once win",
    "8 concurrent save(runId, 1) of a run at step 0: expected exactly one to resolve",
  ],
  [
    broken.noSegmentCheck,
    "call-log",
    CLAIM,
    "recordCall(runId, segment 0, seq 2) after step 1 claimed segment 1 (a fenced worker): expected CheckpointConflict",
  ],
  [
    broken.recordTakesGap,
    "call-log",
    "refuses a duplicate number and a gap, and keeps what it had",
    "recordCall(runId, 0, 3) when segment 0 holds seqs 0–1 (a gap)",
  ],
  [
    broken.recordTakesDuplicate,
    "call-log",
    "refuses a duplicate number and a gap, and keeps what it had",
    "recordCall(runId, 0, 1) when segment 0 holds seqs 0–1 (a duplicate)",
  ],
  [
    broken.storesResendTwice,
    "call-log",
    "takes a record resent identical as a no-op or refuses it, and never stores it twice",
    "calls(runId) after records 1 and 0 were resent identical: expected each record once, in order",
  ],
  [
    broken.recordOnEndedRun,
    "call-log",
    "refuses a record for an unknown run or an ended one",
    "recordCall(runId, 0, 0) after a done step 0 (an ended run): expected CheckpointConflict",
  ],
  [broken.listIncludesFailed, "read", LIST, "listUnfinished(flow) over a running, a paused, a done and a failed run"],
  [broken.listMissesPaused, "read", LIST, "expected the running and the paused run's ids only"],
  [
    broken.listMissesPaused,
    "read",
    "listUnfinished follows a run's latest status",
    "listUnfinished(flow) after a paused latest step",
  ],
  [
    broken.listLoadsEverything,
    "scale",
    "10,000 unfinished runs are streamed, all listed, and no ended one",
    "heap held once the first id came: expected under",
  ],
  [broken.deleteByPrefix, "read", DELETE, "listUnfinished(flow) after delete(runId): expected only the other run"],
  [
    broken.deleteByPrefix,
    "isolation",
    "run ids holding * ? [ ] { } : spaces and other characters reach no other run",
    "delete removes only the exact id",
  ],
  [broken.deleteKeepsRecords, "read", DELETE, "calls(runId) after delete(runId): expected no records"],
  [
    broken.latestFirstRow,
    "read",
    "latest gives the row of the highest step, also past step 9",
    "latest(runId) after saving steps 0–11: expected the row of step 11",
  ],
  [
    broken.latestStepsAsText,
    "read",
    "latest gives the row of the highest step, also past step 9",
    "latest(runId) after saving steps 0–11: expected the row of step 11",
  ],
  [broken.callsSeqFirst, "call-log", NUMBERING, "ordered by segment then seq"],
  [broken.callsAsText, "call-log", NUMBERING, "ordered by segment then seq, as numbers"],
  [broken.dropsLastRecord, "call-log", NUMBERING, "calls(runId) after records in segments 0–11"],
  [broken.reordersRecords, "call-log", NUMBERING, "calls(runId) after records in segments 0–11"],
  [
    broken.ignoresPrefix,
    "isolation",
    "a second store sees nothing of the first, and changes nothing of it",
    "on a second store",
  ],
  [
    leases.ignoresLeases,
    "lease",
    LIVE_LEASE,
    "save(runId, 1) from segment 1 by B while A's lease is live: expected LeaseHeld, and nothing written",
  ],
  [leases.leaseByWorkerClock, "lease", LEASE_CLOCK, "with Date.now an hour ahead: expected"],
  [
    leases.renewsForAnyone,
    "lease",
    RENEWAL,
    "renew(runId, 0, B) while A holds the lease: expected CheckpointConflict: only the owner renews",
  ],
  [
    leases.savesNeverRenew,
    "lease",
    "a running save renews its owner's lease once a third of it has passed",
    "after save(runId, 1) by A 600 ms into a 1200 ms lease: expected expiresAt − now more than 900 ms",
  ],
  [
    leases.keepsLeaseThroughSleep,
    "timers",
    "a save that hands a run's lease to its sleep holds it from every claim and from the claimable listing until the wake time by the store's clock; then one of racing workers wakes it",
    "leaseOf(runId) after save(runId, 1) from segment 0 with a 1200 ms lease for (asleep): expected a lease held by",
  ],
  [
    events.appendsResends,
    "events",
    "a resend under a key the inbox holds resolves false and writes nothing, at any seq and also once the run ended",
    "sendEvent(runId, { seq: 0, key: a }) with a in the inbox: expected false: a resend",
  ],
  [
    events.takesEventsWhenEnded,
    "events",
    "sendEvent refuses an unknown run, an ended run, a seq out of place and a malformed event, writing nothing",
    "sendEvent to a done run: expected RunAlreadyEnded",
  ],
  [
    events.keepsWaitingLease,
    "events",
    "an event releases the lease of a run waiting for one (WAITING), and no other lease: not a sleep's (ASLEEP), not a worker's",
    "leaseOf(runId) after an event was sent to the waiting run: expected undefined: released",
  ],
  [
    events.ignoresEventsSeen,
    "events",
    "a save for WAITING that saw fewer events than the inbox holds takes no lease: the run is claimable at once (save and commit, an event sent by another client too)",
    "save for WAITING with events: 0 over an inbox of 1: expected no lease: the run is claimable at once",
  ],
  [queues.ignoresConcurrency, "queue", QUEUE_RACE, "at most 3 runs held at once"],
  [
    queues.ignoresConcurrency,
    "queue",
    CONCURRENCY,
    "a third take with concurrency 2: expected QueueFull (concurrency)",
  ],
  [queues.ignoresPerKey, "queue", PER_KEY, "a second take of key alice with perKey 1: expected QueueFull (key)"],
  [queues.ignoresRate, "queue", RATE, "a third start within the window: expected QueueFull (rate)"],
  [queues.ignoresPriority, "queue", ORDER, "listQueued(queue): expected b, d (priority 5), a, c (0), e (-1)"],
  [queues.listsNewestFirst, "queue", ORDER, "listQueued(queue): expected b, d (priority 5), a, c (0), e (-1)"],
  [
    queues.listsQueuedAsClaimable,
    "queue",
    ORDER,
    "listUnfinished(flow, { claimable: true }): expected the run started on no queue only",
  ],
  [
    queues.renewsWithoutTaking,
    "queue",
    CONCURRENCY,
    "renew(runId) of a lease that ran out while the queue filled up: expected QueueFull",
  ],
  [queues.commitsWithoutTaking, "queue", CONCURRENCY, "a take by commit while the queue is full: expected QueueFull"],
  [
    queues.takesEachRowsPlace,
    "queue",
    STEP_ZERO,
    "a take whose row names no queue while the run's queue is full: expected QueueFull (concurrency)",
  ],
  [
    leases.dropsSaveLease,
    "lease",
    LIVE_LEASE,
    "leaseOf(runId) after save(runId, 0) with a 300000 ms lease for A: expected a lease held by",
  ],
  [
    leases.dropsListOptions,
    "lease",
    "a claim after a lease ran out succeeds, and until then the run is not claimable",
    "listUnfinished(flow, { claimable: true }) right after a 1500 ms lease: expected not the run",
  ],
  [
    broken.runsOldestFirst,
    "inspect",
    "runs of every status are listed newest first, with their latest step, segment and name",
    "listRuns({ name }) after runs a (failed), b (done), c (paused), d (running) were saved: expected d, c, b, a: newest first",
  ],
  [
    broken.cursorRepeats,
    "inspect",
    "pages follow one another by cursor, each run once, the last without a next",
    "listRuns({ name, limit: 3 }) then its next cursors, over 7 runs: expected pages of 3, 3 and 1",
  ],
  [
    broken.historyFromNext,
    "tamper",
    "a run saved as changes (12 steps) reads back whole from the store's history, the latest and the whole timeline",
    "history(runId, 10): expected steps 10 to 12 (or all)",
  ],
  [
    broken.trustsItsRows,
    "integrity",
    "a checkpoint row with a column of another shape (a status no run has, a segment that is not a whole number, no envelope): latest and history are CheckpointStoreCorrupt naming the run",
    'checkpoint status = "stalled": latest(runId) resolved with',
  ],
  [
    broken.trustsItsRows,
    "integrity",
    "a call record with a column of another shape: calls is CheckpointStoreCorrupt naming the run",
    "call segment = -1: calls(runId) resolved with",
  ],
  [
    broken.listsRunsWaitingForDecision,
    "lease",
    "of 1,000 runs saved waiting for a decision and 20 claimable ones, the claimable listing gives the claimable ones only, and a run again once a save without the mark claimed it",
    "listUnfinished(flow, { claimable: true }) over 1000 runs whose latest step was saved waitsForDecision: expected none of them",
  ],
  [
    forks.historyByPattern,
    "fork",
    FORK_OWN,
    "history(fork) after forkRun(original, { fromStep: 3 }): expected the fork's steps 0 to 4 under its own id",
  ],
  [broken.deleteByPrefix, "fork", FORK_DELETE, "the fork's rows after delete(original): expected the fork whole"],
  [ttlOnPaused, "ttl", TTL, "latest(runId) of a paused run"],
  [ttlOnRunning, "ttl", TTL, "latest(runId) of a running run 900 ms after its last write: expected the running row"],
];

describe("the kit catches broken stores", () => {
  const named = CAUGHT.map(([init, group, caughtBy, says]) => [init.name, group, caughtBy, init, says] as const);
  it.each(named)(
    "a store that %s fails %s: %s",
    async (_, group, caughtBy, init, says) => {
      const failed = await failingCases(init, group);
      expect([...failed.keys()]).toContain(caughtBy);
      // What a store author needs: the operation, what the rule expected, the rule's section, and what came back.
      const message = failed.get(caughtBy)!;
      expect(message).toContain(says);
      expect(message).toMatch(/\(docs\/protocol\.md#[a-z-]+\)/);
      expect(message).not.toContain("\u001b[");
    },
    60_000,
  );

  it("a store that records calls of any segment fails the call-log race of a claim and a record", async () => {
    const failed = await failingCases(broken.noSegmentCheck, "call-log");
    expect([...failed.keys()]).toContain("refuses a record from an older segment when the claim and the record race");
  }, 60_000);

  it("every broken store passes the groups that do not guard its fault, so each failure is the right one", async () => {
    expect([...(await failingCases(broken.noSegmentCheck, "save")).keys()]).toEqual([]);
    expect([...(await failingCases(broken.dropsLastRecord, "save")).keys()]).toEqual([]);
    expect([...(await failingCases(broken.ignoresPrefix, "call-log")).keys()]).toEqual([]);
    expect([...(await failingCases(broken.listLoadsEverything, "read")).keys()]).toEqual([]);
    expect([...(await failingCases(broken.latestStepsAsText, "call-log")).keys()]).toEqual([]);
  }, 60_000);

  it("names every group once", () => {
    expect(GROUPS.map((g) => g.name)).toEqual([
      "save",
      "read",
      "call-log",
      "batch",
      "lease",
      "timers",
      "events",
      "stream",
      "queue",
      "inspect",
      "fork",
      "integrity",
      "tamper",
      "anchor",
      "isolation",
      "ttl",
      "scale",
      "race",
      "crash",
    ]);
  });
});

describe("the initializer's shape", () => {
  it("multiProcess needs an opener module and a handle function", () => {
    const base = { name: "s", createStore: () => memory.createStore() };
    expect(initializerProblems({ ...base, capabilities: { multiProcess: true } })).toEqual([
      "`capabilities.multiProcess` must be { opener: <URL of a module whose default export opens a store from a handle>, handle: (store) => string }.",
    ]);
    expect(
      initializerProblems({ ...base, capabilities: { multiProcess: { opener: "file:///x.mjs", handle: () => "h" } } }),
    ).toEqual([]);
  });
});
