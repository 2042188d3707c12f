/**
 * What the Redis store costs: round trips per operation (counted at the
 * client) and operations per second next to raw node-redis SET and EVAL
 * round trips of the same size.   pnpm bench   (REDIS_URL, default 127.0.0.1:6379)
 */
import { randomUUID } from "node:crypto";
import { createClient } from "redis";
import { Sealer, sealCheckpoint, type CallRecord } from "@durable/core";
import { RedisCheckpointStore } from "../src/index.js";

const URL = process.env["REDIS_URL"] ?? "redis://127.0.0.1:6379";
const COUNT = Number(process.argv[2] ?? 2000);
const sealer = Sealer.withKeys("bench-key-0123456789abcdef-0123456789");

let roundTrips = 0;
const counted = () => {
  const c = createClient({ url: URL });
  for (const name of ["evalSha", "eval", "hGetAll"] as const) {
    const original = c[name].bind(c) as (...args: unknown[]) => Promise<unknown>;
    (c as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
      roundTrips++;
      return original(...args);
    };
  }
  return c;
};

const rate = (n: number, start: bigint) => n / (Number(process.hrtime.bigint() - start) / 1e9);
const store = new RedisCheckpointStore(counted, { prefix: `bench:${randomUUID()}`, ttlSeconds: 60 });
const runs = Array.from({ length: COUNT }, (_, i) => `run-${Math.floor(i / 10)}`);
const rows = runs.map((runId, i) =>
  sealCheckpoint(sealer, { runId, step: i % 10, status: "running", segment: 0, flow: "bench", kind: "flow", identity: {}, calls: 0, data: { show: "Hamlet", seats: 2, note: "x".repeat(100) } }),
);
await store.save("warm", 0, rows[0]!); // connects and loads the script
roundTrips = 0;
let start = process.hrtime.bigint();
for (let i = 0; i < COUNT; i++) await store.save(runs[i]!, i % 10, rows[i]!);
const saves = rate(COUNT, start);
const saveTrips = roundTrips / COUNT;
const records = Array.from({ length: COUNT }, (_, seq) => {
  const record: CallRecord = { runId: "run-0", segment: 0, seq, round: 1, callId: `1:pay:${seq}`, tool: "charge_card", kind: "started", args: { seats: 2 } };
  return sealer.seal("call", record);
});
roundTrips = 0;
start = process.hrtime.bigint();
for (let seq = 0; seq < COUNT; seq++) await store.recordCall("run-0", 0, seq, records[seq]!);
const recordRate = rate(COUNT, start);
const recordTrips = roundTrips / COUNT;

const raw = createClient({ url: URL });
await raw.connect();
const value = "x".repeat(rows[0]!.sealed.length);
start = process.hrtime.bigint();
for (let i = 0; i < COUNT; i++) await raw.set(`bench-raw:${i}`, value);
const sets = rate(COUNT, start);
start = process.hrtime.bigint();
for (let i = 0; i < COUNT; i++) await raw.eval("return redis.call('SET', KEYS[1], ARGV[1])", { keys: [`bench-raw:${i}`], arguments: [value] });
const evals = rate(COUNT, start);
await raw.del(Array.from({ length: COUNT }, (_, i) => `bench-raw:${i}`));
await raw.close();
await store.close();

const fmt = (n: number) => Math.round(n).toLocaleString("en").padStart(8);
console.log(`Redis store vs raw node-redis round trips (${COUNT} operations, one at a time)`);
console.log(`  operation    round trips   ops/s   raw SET/s  raw EVAL/s   EVAL ÷ durable`);
console.log(`  save         ${saveTrips.toFixed(2).padStart(11)}  ${fmt(saves)}  ${fmt(sets)}  ${fmt(evals)}   ${(evals / saves).toFixed(2)}`);
console.log(`  recordCall   ${recordTrips.toFixed(2).padStart(11)}  ${fmt(recordRate)}  ${fmt(sets)}  ${fmt(evals)}   ${(evals / recordRate).toFixed(2)}`);
console.log("  (the bench store's keys expire 60 s after its last write)");
