import { Bench } from "tinybench";
import type { CheckpointStore } from "@durable/core";
import type { Peer } from "./peers/peer.js";
import { latencyOf, round, type Latency } from "./stats.js";
import { mediansInTurns, securityCost, type SecurityFigures } from "./security.js";
import type { RawWriter } from "./targets.js";
import { telemetryCost, type TelemetryFigures } from "./telemetry.js";
import { ORDER, noting, plainTickets, runner, tickets, unleased, type WriteLog } from "./workload.js";

interface RunFigures {
  readonly runsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

export interface TicketsFigures {
  /** One run at a time. */
  readonly single: RunFigures;
  /** 16 runs at once: runs per second over the wall time, and each run's own time. */
  readonly concurrent16: RunFigures;
  /** The same run's tools called with no store at all. */
  readonly plainP50Ms: number;
  /** What durability adds per tool call: (run − plain run) ÷ 3 calls, medians. */
  readonly perCallUs: number;
  readonly writesPerRun: number;
  /** Store operations that wrote, per run: a batch is one. */
  readonly commitsPerRun: number;
  /** Statements (round trips) sent to the server in one run, counted where the target can count them. */
  readonly roundTripsPerRun?: number;
  readonly bytesPerRun: number;
  /** What leases add to a run: the writes of their own (renewals, releases; 0 when each save carries the lease) and the time, medians. */
  readonly lease: { readonly writesPerRun: number; readonly usPerRun: number };
  /** What encryption, Ed25519 and an anchor add to a run (µs at the median over the default). */
  readonly security: SecurityFigures;
  /** What OpenTelemetry adds to a run: no SDK registered (the default) against the SDK registered, in turns. */
  readonly telemetry: TelemetryFigures;
  /** The same writes (number and sizes) straight through the driver, and durable ÷ raw at the median. */
  readonly raw?: { readonly p50Ms: number; readonly ratio: number };
  /** Other libraries running the same flow on the same kind of store, measured alongside. */
  readonly peers: readonly PeerFigures[];
}

export interface PeerFigures {
  readonly name: string;
  readonly roundTripsPerRun?: number;
  readonly single: RunFigures;
  readonly concurrent16: RunFigures;
  /**
   * A @durable run's time over the peer's: one at a time at the median, 16 at
   * once per run of wall time (the peer's runs/s over @durable's). Below 1,
   * @durable is faster.
   */
  readonly durableOver: { readonly single: number; readonly concurrent16: number };
}

const figures = (l: Latency, runsPerSecond: number): RunFigures => ({
  runsPerSecond: round(runsPerSecond, 0),
  p50Ms: round(l.p50, 3),
  p99Ms: round(l.p99, 3),
});

/** The tickets flow on one store, next to no store, the raw driver and the peers on the same kind of store. */
export async function measureTickets(
  store: CheckpointStore,
  raw: RawWriter | undefined,
  budgetMs: number,
  peers: readonly Peer[] = [],
  countTrips?: () => () => number,
): Promise<TicketsFigures> {
  const log: WriteLog = { writes: [], commits: 0 };
  await runner(noting(store, log)).run(tickets, ORDER, { runId: "sizing" });
  const worker = runner(store);
  let n = 0;
  // One warm run of each contender, its round trips counted.
  const tripsOf = async (run: (id: string) => Promise<void>) => {
    await run(`warm-${n++}`);
    const stop = countTrips?.();
    await run(`counted-${n++}`);
    return stop?.();
  };
  const roundTripsPerRun = await tripsOf(async (id) => void (await worker.run(tickets, ORDER, { runId: id })));
  const peerTrips: Array<number | undefined> = [];
  for (const peer of peers) peerTrips.push(await tripsOf(peer.run));

  const bench = new Bench({ time: budgetMs, iterations: 50, warmupIterations: 10 });
  bench.add("durable", async () => void (await worker.run(tickets, ORDER, { runId: `single-${n++}` })));
  for (const peer of peers) bench.add(peer.name, () => peer.run(`single-${n++}`));
  bench.add("plain", plainTickets);
  if (raw !== undefined) {
    let r = 0;
    const payloads = log.writes.map((w) => "x".repeat(w.bytes));
    bench.add("raw", async () => {
      const run = r++;
      for (const [i, payload] of payloads.entries()) await raw.write(`${run}:${i}`, payload);
    });
  }
  await bench.run();
  const latency = (name: string): Latency => {
    const result = bench.getTask(name)?.result;
    if (result === undefined || result.state !== "completed") throw new Error(`the ${name} task did not complete`);
    return result.latency;
  };
  const durable = latency("durable");
  const plain = latency("plain");
  const leased = await leaseCost(store, Math.max(40, Math.round(budgetMs / durable.mean / 2)));
  const security = await securityCost(store, Math.max(20, Math.round(budgetMs / durable.mean / 2)));

  const [concurrent16, ...peersAt16] = await sixteenAtOnce(
    [async (id) => void (await worker.run(tickets, ORDER, { runId: id })), ...peers.map((peer) => peer.run)],
    budgetMs,
  );
  if (concurrent16 === undefined) throw new Error("16 at once measured nothing");
  // Last: the measures above run before this store's turns register an SDK in the process.
  const telemetry = await telemetryCost(store, Math.max(10, Math.round(budgetMs / durable.mean / 8)));
  const single = figures(durable, 1000 / durable.mean);

  return {
    single,
    concurrent16,
    plainP50Ms: round(plain.p50, 4),
    perCallUs: round(((durable.p50 - plain.p50) * 1000) / 3, 0),
    writesPerRun: log.writes.length,
    commitsPerRun: log.commits,
    ...(roundTripsPerRun === undefined ? {} : { roundTripsPerRun }),
    bytesPerRun: log.writes.reduce((a, w) => a + w.bytes, 0),
    lease: {
      writesPerRun: log.writes.filter((w) => w.kind === "renew" || w.kind === "release").length,
      usPerRun: leased,
    },
    security,
    telemetry,
    ...(raw === undefined
      ? {}
      : { raw: { p50Ms: round(latency("raw").p50, 3), ratio: round(durable.p50 / latency("raw").p50) } }),
    peers: peers.map((peer, i) => {
      const own = latency(peer.name);
      const at16 = peersAt16[i] ?? concurrent16;
      const roundTripsPerRun = peerTrips[i];
      return {
        name: peer.name,
        ...(roundTripsPerRun === undefined ? {} : { roundTripsPerRun }),
        single: figures(own, 1000 / own.mean),
        concurrent16: at16,
        durableOver: {
          single: round(durable.p50 / own.p50),
          concurrent16: round(at16.runsPerSecond / concurrent16.runsPerSecond),
        },
      };
    }),
  };
}

/**
 * Each contender's runs 16 at once, in batches taken in turns (the order
 * rotating each round) so a machine that is busier at one moment weighs on
 * all alike; each gets about the time budget and at least 10 batches.
 */
async function sixteenAtOnce(
  contenders: ReadonlyArray<(runId: string) => Promise<void>>,
  budgetMs: number,
): Promise<RunFigures[]> {
  const sides = contenders.map((run) => ({ run, samples: [] as number[], wallMs: 0 }));
  let n = 0;
  const started = performance.now();
  for (let round = 0; round < 10 || performance.now() - started < budgetMs * sides.length; round++) {
    const turn = round % sides.length;
    for (const side of [...sides.slice(turn), ...sides.slice(0, turn)]) {
      const batch = performance.now();
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          const t = performance.now();
          await side.run(`concurrent-${n++}`);
          side.samples.push(performance.now() - t);
        }),
      );
      side.wallMs += performance.now() - batch;
    }
  }
  return sides.map((side) => figures(latencyOf(side.samples), side.samples.length / (side.wallMs / 1000)));
}

/**
 * What leases add to a run's median, in µs: runs with leases and the same
 * runs with every save's lease dropped, taken in turns (the order swapped
 * each pair), so a store that warms up or grows as the bench goes on weighs
 * on both alike.
 */
async function leaseCost(store: CheckpointStore, pairs: number): Promise<number> {
  const [leased = 0, bare = 0] = await mediansInTurns([runner(store), runner(unleased(store))], pairs, "lease-cost");
  return round((leased - bare) * 1000, 0);
}
