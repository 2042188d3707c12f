import { generateKeyPairSync } from "node:crypto";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CheckpointStore } from "@durable/core";
import { SQLiteRunAnchor } from "@durable/store-sqlite";
import type { FlowRunner } from "@durable/flow";
import { latencyOf, round } from "./stats.js";
import { KEY, ORDER, runner, tickets } from "./workload.js";

/** What each protection adds to a tickets run, in µs at the median, over the default (HMAC, no encryption, no anchor). */
export interface SecurityFigures {
  readonly encryptionUs: number;
  readonly ed25519Us: number;
  readonly ed25519EncryptedUs: number;
  /** A `SQLiteRunAnchor` in a file of its own: one anchor write after each of the run's 4 commits. */
  readonly sqliteAnchorUs: number;
}

const ENCRYPTION_KEY = "bench-encryption-key-0123456789abcdef";

/**
 * Runs the tickets flow with each protection and without, in turns (the
 * order rotating each round), so a store that warms up or grows as the
 * bench goes on weighs on all alike.
 */
export async function securityCost(store: CheckpointStore, rounds: number): Promise<SecurityFigures> {
  const { privateKey } = generateKeyPairSync("ed25519");
  const anchorPath = join(tmpdir(), `durable-bench-anchor-${process.pid}.db`);
  const anchor = new SQLiteRunAnchor(anchorPath);
  try {
    const [plain = 0, encrypted = 0, ed25519 = 0, both = 0, anchored = 0] = await mediansInTurns(
      [
        runner(store),
        runner(store, { encryptionKey: ENCRYPTION_KEY }),
        runner(store, { checkpointKey: privateKey }),
        runner(store, { checkpointKey: privateKey, encryptionKey: ENCRYPTION_KEY }),
        runner(store, { checkpointKey: KEY, anchor }),
      ],
      rounds,
      "security",
    );
    const over = (ms: number) => round((ms - plain) * 1000, 0);
    return {
      encryptionUs: over(encrypted),
      ed25519Us: over(ed25519),
      ed25519EncryptedUs: over(both),
      sqliteAnchorUs: over(anchored),
    };
  } finally {
    await anchor.close();
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${anchorPath}${suffix}`, { force: true });
  }
}

/** Each runner's median tickets run, in ms, the runners taking turns for `rounds` rounds. */
export async function mediansInTurns(runners: readonly FlowRunner[], rounds: number, label: string): Promise<number[]> {
  const samples = runners.map(() => [] as number[]);
  let n = 0;
  for (let i = 0; i < rounds; i++) {
    for (let k = 0; k < runners.length; k++) {
      const at = (i + k) % runners.length;
      const start = performance.now();
      await runners[at]?.run(tickets, ORDER, { runId: `${label}-${n++}` });
      samples[at]?.push(performance.now() - start);
    }
  }
  return samples.map((s) => latencyOf(s).p50);
}
