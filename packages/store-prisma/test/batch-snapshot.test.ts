import { randomUUID } from "node:crypto";
import { PrismaPg } from "@prisma/adapter-pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CheckpointConflict, CheckpointNotFound, type CheckpointRow, type RunWrite } from "@durable/core/store";
import type { Client, Sql, TransactionOptions } from "../src/client.js";
import { PrismaClient } from "../src/generated/postgresql/client.js";
import { PrismaCheckpointStore } from "../src/index.js";
import { postgresAnswers, testDatabase } from "./databases.js";

const db = testDatabase();
const hasPostgres = await postgresAnswers();
const LIVE = 60_000;

const row = (step: number, segment = 0): CheckpointRow => ({
  status: "running",
  segment,
  name: "f",
  kind: "flow",
  sealed: `d1.-.{"step":${step}}`,
});
const record = (seq: number, tag = "mine"): RunWrite => ({ kind: "record", segment: 0, seq, sealed: `d1.-.${tag}` });
const save = (step: number): RunWrite => ({ kind: "save", step, row: row(step), lease: { owner: "w", ms: LIVE } });

/** The error `promise` fails with (undefined if it resolves). */
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

/**
 * A client that counts what the store sends, and runs `between` once, right
 * after the store read a run's row without locking it: another worker's
 * write then lands between the read a batch is decided on and its write.
 */
class Spy implements Client {
  queries = 0;
  transactions = 0;
  between: (() => Promise<void>) | undefined;
  readonly #inner: Client;

  constructor(inner: Client) {
    this.#inner = inner;
  }

  $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number> {
    this.queries++;
    return this.#inner.$executeRawUnsafe(query, ...values);
  }

  async $queryRawUnsafe<T>(query: string, ...values: unknown[]): Promise<T> {
    this.queries++;
    const rows = await this.#inner.$queryRawUnsafe<T>(query, ...values);
    const unlockedRead = query.includes(`AS "clock"`) && !query.includes("FOR UPDATE");
    const between = this.between;
    if (unlockedRead && between !== undefined) {
      this.between = undefined;
      await between();
    }
    return rows;
  }

  $transaction<T>(fn: (tx: Sql) => Promise<T>, options?: TransactionOptions): Promise<T>;
  $transaction(queries: readonly Promise<unknown>[]): Promise<unknown[]>;
  $transaction(arg: ((tx: Sql) => Promise<unknown>) | readonly Promise<unknown>[], options?: TransactionOptions) {
    this.transactions++;
    return typeof arg === "function" ? this.#inner.$transaction(arg, options) : this.#inner.$transaction(arg);
  }

  $disconnect(): Promise<void> {
    return this.#inner.$disconnect();
  }
}

describe.runIf(hasPostgres)("PrismaCheckpointStore commit on PostgreSQL, between its read and its write", () => {
  let inner: Client;
  let spy: Spy;
  let store: PrismaCheckpointStore;
  let other: PrismaCheckpointStore;
  beforeAll(async () => {
    await db.create();
    inner = new PrismaClient({ adapter: new PrismaPg({ connectionString: db.url }) }) as unknown as Client;
    spy = new Spy(inner);
    const tablePrefix = `s${randomUUID().slice(0, 8)}_`;
    store = PrismaCheckpointStore.fromClient(spy, { provider: "postgresql", tablePrefix });
    await store.migrate();
    other = new PrismaCheckpointStore(db.url, { tablePrefix });
  }, 60_000);
  afterAll(async () => {
    await other?.close();
    await inner?.$disconnect();
    await db.drop();
  });

  it("after its own write, is one statement with no read and no transaction; the lease stays as the database set it", async () => {
    const runId = randomUUID();
    await store.save(runId, 0, row(0), { owner: "w", ms: LIVE });
    const lease = await store.leaseOf(runId);
    spy.queries = 0;
    spy.transactions = 0;
    await store.commit(runId, [record(0), save(1), record(1)]);
    await store.commit(runId, [{ kind: "record", segment: 0, seq: 2, sealed: "d1.-.mine" }, save(2)]);
    expect([spy.queries, spy.transactions]).toEqual([2, 0]);
    expect((await store.calls(runId)).map((c) => c.seq)).toEqual([0, 1, 2]);
    expect((await store.latest(runId)).step).toBe(2);
    expect((await store.leaseOf(runId))?.expiresAt).toBe(lease?.expiresAt);
  });

  it("after its own write, misses when another worker moved the row since (a renewal), and is decided on a read: accepted once", async () => {
    const runId = randomUUID();
    await store.save(runId, 0, row(0), { owner: "w", ms: LIVE });
    await other.renew(runId, 0, { owner: "w", ms: 2 * LIVE });
    spy.queries = 0;
    spy.transactions = 0;
    await store.commit(runId, [record(0), save(1), record(1)]);
    expect([spy.queries, spy.transactions]).toEqual([3, 0]);
    expect((await store.calls(runId)).map((c) => c.seq)).toEqual([0, 1]);
  });

  it("after its own write, is refused for the reason the stored run gives when another worker took the step since", async () => {
    const runId = randomUUID();
    await store.save(runId, 0, row(0));
    await other.commit(runId, [record(0, "theirs"), save(1)]);
    const refused = await failure(store.commit(runId, [record(0), save(1), record(1)]));
    expect((refused as Error).message).toMatch(/call record 0 of segment 0 is not the next one \(1\)/);
    expect((await store.calls(runId)).map((c) => c.sealed)).toEqual(["d1.-.theirs"]);
  });

  it("after its own write, is refused as an unknown run when another worker deleted the run since", async () => {
    const runId = randomUUID();
    await store.save(runId, 0, row(0));
    await other.delete(runId);
    expect(await failure(store.commit(runId, [record(0), save(1)]))).toBeInstanceOf(CheckpointNotFound);
    expect(await store.calls(runId)).toEqual([]);
  });

  it("of a run it did not write is two statements and no transaction when nothing else writes the run", async () => {
    const runId = randomUUID();
    await other.save(runId, 0, row(0), { owner: "w", ms: LIVE });
    spy.queries = 0;
    spy.transactions = 0;
    await store.commit(runId, [record(0), save(1), record(1)]);
    expect([spy.queries, spy.transactions]).toEqual([2, 0]);
    expect((await store.calls(runId)).map((c) => c.seq)).toEqual([0, 1]);
  });

  it("of records alone is one statement, with no read; refused, it reads the run for the reason", async () => {
    const runId = randomUUID();
    await other.save(runId, 0, row(0));
    spy.queries = 0;
    spy.transactions = 0;
    await store.commit(runId, [record(0), record(1)]);
    expect([spy.queries, spy.transactions]).toEqual([1, 0]);
    spy.queries = 0;
    const refused = await failure(store.commit(runId, [record(3)]));
    expect((refused as Error).message).toMatch(/call record 3 of segment 0 is not the next one \(2\)/);
    expect([spy.queries, spy.transactions]).toEqual([2, 0]);
    expect((await store.calls(runId)).map((c) => c.seq)).toEqual([0, 1]);
  });

  it("is done again under the run's lock when the row changed (a renewal): accepted, and written once", async () => {
    const runId = randomUUID();
    await other.save(runId, 0, row(0), { owner: "w", ms: LIVE });
    spy.transactions = 0;
    spy.between = async () => void (await other.renew(runId, 0, { owner: "w", ms: 2 * LIVE }));
    await store.commit(runId, [record(0), save(1), record(1)]);
    expect(spy.transactions).toBe(1);
    expect((await store.latest(runId)).step).toBe(1);
    expect((await store.calls(runId)).map((c) => [c.seq, c.sealed])).toEqual([
      [0, "d1.-.mine"],
      [1, "d1.-.mine"],
    ]);
  });

  it("is refused, writing nothing, when another worker's batch took the step in between", async () => {
    const runId = randomUUID();
    await other.save(runId, 0, row(0));
    spy.between = () => other.commit(runId, [record(0, "theirs"), save(1)]);
    const refused = await failure(store.commit(runId, [record(0), save(1), record(1)]));
    expect(refused).toBeInstanceOf(CheckpointConflict);
    expect((refused as Error).message).toMatch(/call record 0 of segment 0 is not the next one \(1\)/);
    expect((await store.calls(runId)).map((c) => c.sealed)).toEqual(["d1.-.theirs"]);
  });

  it("starting a run, is one statement with no read; refused, writing nothing, when another worker started it first", async () => {
    const mine = randomUUID();
    spy.queries = 0;
    await store.commit(mine, [save(0), record(0)]);
    expect(spy.queries).toBe(1);
    expect((await store.leaseOf(mine))?.owner).toBe("w");
    const theirs = randomUUID();
    await other.save(theirs, 0, row(0));
    const refused = await failure(store.commit(theirs, [save(0), record(0)]));
    expect(refused).toBeInstanceOf(CheckpointConflict);
    expect(await store.calls(theirs)).toEqual([]);
    expect(await store.leaseOf(theirs)).toBeUndefined();
  });

  it("is refused as an unknown run when the run was deleted in between", async () => {
    const runId = randomUUID();
    await other.save(runId, 0, row(0));
    spy.between = () => other.delete(runId);
    expect(await failure(store.commit(runId, [record(0), save(1)]))).toBeInstanceOf(CheckpointNotFound);
    expect(await store.calls(runId)).toEqual([]);
  });
});
