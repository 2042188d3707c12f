import { alignColumns } from "@durable-apps/shared/table";
import type { PeerFigures, TicketsFigures } from "./runs.js";
import type { SweepFigures } from "./sweeps.js";

export interface StoreResult {
  readonly store: string;
  readonly detail: string;
  readonly tickets: TicketsFigures;
  readonly sweeps: SweepFigures;
}

/** The tables `pnpm bench` prints. */
export function report(results: readonly StoreResult[]): string {
  const lines: string[] = [];
  const table = (header: string[], rows: Array<Array<string | number>>) =>
    lines.push(...alignColumns([header, ...rows]), "");
  const first = results[0]?.tickets;
  lines.push(
    `The tickets flow: 3 supersteps, 3 tool calls, ${first?.writesPerRun ?? "?"} writes (${first?.bytesPerRun ?? "?"} bytes) per run. Times in ms; commits: the store operations that wrote, per run (a batch is one); round trips: the statements one run sends to the server, counted in the driver.`,
  );
  table(
    ["store", "commits", "round trips", ...RUN_HEADERS, "µs per call", "raw p50", "durable ÷ raw"],
    results.map(({ store, tickets: t }) => [
      store,
      t.commitsPerRun,
      t.roundTripsPerRun ?? "–",
      ...runColumns(t),
      t.perCallUs,
      t.raw?.p50Ms ?? "–",
      t.raw?.ratio ?? "–",
    ]),
  );
  lines.push(
    "µs per call: what durability adds to each tool call over the same tools called with no store. raw: the same writes, one by one, through the driver.",
  );
  lines.push("");
  const withPeers = results.filter(({ tickets: t }) => t.peers.length > 0);
  if (withPeers.length > 0) {
    lines.push(
      "Next to the peers: the same flow (3 steps, one no-op call each, ~200 B of state) on the same kind of store.",
    );
    table(
      ["store", "run by", "round trips", ...RUN_HEADERS, "durable ÷ peer", "at 16"],
      withPeers.flatMap(({ store, tickets: t }) => [
        [store, "@durable", t.roundTripsPerRun ?? "–", ...runColumns(t), "–", "–"],
        ...t.peers.map((p) => [
          store,
          p.name,
          p.roundTripsPerRun ?? "–",
          ...runColumns(p),
          p.durableOver.single,
          p.durableOver.concurrent16,
        ]),
      ]),
    );
    lines.push(
      "durable ÷ peer: a @durable run's time over the peer's, one at a time at the median and 16 at once per run of wall time; below 1, @durable is faster. " +
        "One at a time the contenders run one after another; 16 at once their batches take turns.",
    );
    lines.push("");
  }
  table(
    ["store", "lease writes per run", "lease µs per run"],
    results.map(({ store, tickets: t }) => [store, t.lease.writesPerRun, t.lease.usPerRun]),
  );
  lines.push(
    "Leases: a claim sets the lease and a save renews it once a third of it passed, so a run that saves often writes nothing more for it; µs: the run's median with leases minus without, the two taken in turns.",
  );
  lines.push("");
  table(
    ["store", "encryption µs per run", "Ed25519 µs per run", "both µs per run", "SQLite anchor µs per run"],
    results.map(({ store, tickets: { security: s } }) => [
      store,
      s.encryptionUs,
      s.ed25519Us,
      s.ed25519EncryptedUs,
      s.sqliteAnchorUs,
    ]),
  );
  lines.push(
    "Security (docs/security.md): what each option adds to a run's median over the default (HMAC, no encryption, no anchor), the runs taking turns. A run seals 10 values (4 checkpoints, 6 call records) and opens none; an anchor adds a durable write after each of the run's 4 commits.",
  );
  lines.push("");
  table(
    [
      "store",
      "OTel off µs per run",
      "OTel SDK on µs per run",
      "SDK adds µs",
      "no SDK: its calls µs",
      "spans per run",
      "metric points per run",
      "measurements per run",
      "bytes added per run",
    ],
    results.map(({ store, tickets: { telemetry: o } }) => [
      store,
      o.offUs,
      o.onUs,
      o.sdkUs,
      o.noSdkCallsUs,
      o.spansPerRun,
      o.metricPointsPerRun,
      o.measurementsPerRun,
      o.bytesAddedPerRun,
    ]),
  );
  lines.push(
    "What OpenTelemetry adds per run: a run's median with no SDK registered (the default) and with the SDK registered (BasicTracerProvider, SimpleSpanProcessor to an InMemorySpanExporter, a MeterProvider and its reader, AsyncLocalStorageContextManager), the two taken in turns in one process. " +
      "With no SDK the API calls are no-ops (no span records, nothing is sealed in the checkpoints): a run without the integration cannot be measured in the same build, so OTel off is the run's own time, not a difference; no SDK: its calls is what a run's own telemetry calls (8 spans, 7 made active around their work, 12 measurements) cost on the API's no-ops, timed alone. " +
      "Metric points: the data points (an instrument and a set of attributes) one run records to, collected after it alone; measurements: its counter increments and histogram records; bytes added: the run's trace, which its checkpoints seal once a span records (none with no SDK).",
  );
  lines.push("");
  for (const { store, sweeps: s } of results) {
    lines.push(`${store}:`);
    table(
      ["state bytes", "save ms"],
      s.stateSize.map((r) => [r.bytes, r.saveMs]),
    );
    table(
      ["calls in a superstep", "run ms", "µs per call"],
      s.callsPerSuperstep.map((r) => [r.calls, r.runMs, r.perCallUs]),
    );
    table(
      ["records in the log", "recover ms", "µs per record"],
      s.recovery.map((r) => [r.records, r.recoverMs, r.perRecordUs]),
    );
    table(
      ["unfinished runs", "recoverEach s", "µs per run", "peak heap MB", "retained B per run"],
      s.recoverEach.map((r) => [r.runs, r.seconds, r.perRunUs, r.peakHeapMb, r.retainedBytesPerRun]),
    );
  }
  return lines.join("\n").trimEnd();
}

/** The headers of `runColumns`. */
const RUN_HEADERS = ["runs/s", "p50", "p99", "16 at once: runs/s", "p50", "p99"];

/** runs/s, p50 and p99, one at a time then 16 at once. */
const runColumns = ({ single: a, concurrent16: b }: Pick<PeerFigures, "single" | "concurrent16">): number[] => [
  a.runsPerSecond,
  a.p50Ms,
  a.p99Ms,
  b.runsPerSecond,
  b.p50Ms,
  b.p99Ms,
];
