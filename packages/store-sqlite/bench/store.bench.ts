/**
 * What the SQLite store costs next to raw better-sqlite3 writes of the same
 * size, with the same pragmas (WAL, synchronous FULL), one transaction each.
 *   pnpm bench   (or: tsx bench/store.bench.ts [count])
 */
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Sealer, sealCheckpoint, type CallRecord } from "@durable/core";
import { SQLiteCheckpointStore } from "../src/index.js";

const COUNT = Number(process.argv[2] ?? 2000);
const sealer = Sealer.withKeys("bench-key-0123456789abcdef-0123456789");
const file = (name: string) => join(tmpdir(), `durable-bench-${process.pid}-${name}.db`);
const clean = (path: string) => ["", "-wal", "-shm"].forEach((s) => rmSync(path + s, { force: true }));

function rate(count: number, start: bigint): number {
  return count / (Number(process.hrtime.bigint() - start) / 1e9);
}

async function durable(): Promise<{ saves: number; records: number; saveBytes: number; recordBytes: number }> {
  const path = file("durable");
  const store = new SQLiteCheckpointStore(path);
  const steps = 10;
  const rows = Array.from({ length: COUNT }, (_, i) => {
    const runId = `run-${Math.floor(i / steps)}`;
    const step = i % steps;
    return { runId, step, row: sealCheckpoint(sealer, { runId, step, status: "running", segment: 0, flow: "bench", kind: "flow", identity: {}, calls: 0, data: { show: "Hamlet", seats: 2, note: "x".repeat(100) } }) };
  });
  let start = process.hrtime.bigint();
  for (const { runId, step, row } of rows) await store.save(runId, step, row);
  const saves = rate(COUNT, start);
  const records = Array.from({ length: COUNT }, (_, seq) => {
    const record: CallRecord = { runId: "run-0", segment: 0, seq, round: 1, callId: `1:pay:${seq}`, tool: "charge_card", kind: "started", args: { show: "Hamlet", seats: 2 } };
    return sealer.seal("call", record);
  });
  start = process.hrtime.bigint();
  for (let seq = 0; seq < COUNT; seq++) await store.recordCall("run-0", 0, seq, records[seq]!);
  const recordRate = rate(COUNT, start);
  await store.close();
  clean(path);
  return { saves, records: recordRate, saveBytes: rows[0]!.row.sealed.length, recordBytes: records[0]!.length };
}

function raw(bytes: number): number {
  const path = file("raw");
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.exec("CREATE TABLE t (k TEXT NOT NULL, n INTEGER NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (k, n)) WITHOUT ROWID");
  const insert = db.prepare("INSERT INTO t VALUES (?, ?, ?)");
  const one = db.transaction((i: number) => insert.run(`run-${Math.floor(i / 10)}`, i % 10, "x".repeat(bytes)));
  const start = process.hrtime.bigint();
  for (let i = 0; i < COUNT; i++) one.immediate(i);
  const result = rate(COUNT, start);
  db.close();
  clean(path);
  return result;
}

const d = await durable();
const rawSaves = raw(d.saveBytes);
const rawRecords = raw(d.recordBytes);
const fmt = (n: number) => Math.round(n).toLocaleString("en").padStart(9);
console.log(`SQLite store vs raw better-sqlite3 (WAL, synchronous FULL, ${COUNT} writes, one transaction each)`);
console.log(`  operation     bytes   durable/s     raw/s   raw ÷ durable`);
console.log(`  save          ${String(d.saveBytes).padStart(5)}   ${fmt(d.saves)} ${fmt(rawSaves)}   ${(rawSaves / d.saves).toFixed(2)}`);
console.log(`  recordCall    ${String(d.recordBytes).padStart(5)}   ${fmt(d.records)} ${fmt(rawRecords)}   ${(rawRecords / d.records).toFixed(2)}`);
