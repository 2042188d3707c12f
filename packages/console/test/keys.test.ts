import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CheckpointStore, InvalidInput, RecoveryNeedsDecision, sendEvent } from "@durable/core";
import { readCallLog, Sealer } from "@durable/core/runner";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { type RunDetail, type RunList, type RunningConsole, startConsole } from "../src/index.js";
import { hangingEmails, KEY, orders, payments, refunds, runner, type Sealing, worker } from "./fixture.js";

// The console reads what workers sealed the way security.md says readers do: encrypted runs with the workers'
// encryption key, Ed25519-signed runs with the public key alone (reading, never acting).
const TOKEN = "console-keys-token-0123456789";
const ENCRYPTION_KEY = "console-test-encryption-key-0123456789";
const dir = mkdtempSync(join(tmpdir(), "durable-console-keys-"));
const events = join(dir, "events.jsonl");
const consoles: RunningConsole[] = [];
const stores: SQLiteCheckpointStore[] = [];

afterAll(async () => {
  for (const c of consoles) await c.close();
  for (const s of stores) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A store holding a done order and a paused refund, both sealed with `sealing`. */
async function seeded(name: string, sealing: Sealing) {
  const store = new SQLiteCheckpointStore(join(dir, `${name}.db`));
  stores.push(store);
  const r = runner(store, events, sealing);
  await r.run(orders, { show: "Hamlet", seats: 2 }, { runId: `${name}-done` });
  await r.run(refunds, { show: "Hamlet", seats: 2 }, { runId: `${name}-paused` });
  return store;
}

async function serve(options: Parameters<typeof startConsole>[0]) {
  const c = await startConsole(options);
  consoles.push(c);
  const get = (path: string) =>
    fetch(`${c.api}${path}`, { headers: { authorization: `Bearer ${TOKEN}` }, redirect: "manual" });
  const detail = async (runId: string) => (await (await get(`/api/runs/${runId}`)).json()) as RunDetail;
  return { c, get, detail };
}

const common = { label: "sqlite", port: 0, token: TOKEN, by: "ops@test" };

/** Posts an action as the run's page would: with its form token, for the step it shows. */
async function act(at: Awaited<ReturnType<typeof serve>>, runId: string, fields: Record<string, string>) {
  const page = await (await at.get(`/runs/${runId}`)).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? "";
  const step = String((await at.detail(runId)).step);
  return fetch(`${at.c.api}/runs/${runId}/actions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ csrf, step, ...fields }),
    redirect: "manual",
  });
}

/** Waits until the run's status in the store itself is `status` (judged outside the console). */
async function untilStored(store: CheckpointStore, runId: string, status: string): Promise<void> {
  await expect.poll(async () => (await store.latest(runId)).status, { timeout: 10_000, interval: 50 }).toBe(status);
}

/** The store with one byte of every latest checkpoint's sealed envelope changed. */
function changedLatest(store: CheckpointStore): CheckpointStore {
  const flip = (sealed: string) => `${sealed.slice(0, -3)}${sealed.at(-3) === "A" ? "B" : "A"}${sealed.slice(-2)}`;
  return new Proxy(store, {
    get(target, name) {
      if (name === "latest")
        return async (runId: string) => ({
          ...(await target.latest(runId)),
          sealed: flip((await target.latest(runId)).sealed),
        });
      const value = Reflect.get(target, name) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe("the console on encrypted runs", () => {
  const encrypted: Sealing = { checkpointKey: KEY, encryptionKey: ENCRYPTION_KEY };

  it("shows their state and calls with the workers' encryption key, and a problem without it", async () => {
    const store = await seeded("enc", encrypted);
    const keyed = await serve({ ...common, store, checkpointKey: KEY, encryptionKey: ENCRYPTION_KEY });
    const done = await keyed.detail("enc-done");
    expect(done.status).toBe("done");
    expect(done.calls.map((call) => call.result)).toEqual(["held 2 for Hamlet", "charged $80", "mailed Hamlet"]);

    // Without it, the runs are intact and out of reach: listed as encrypted, not as corrupt or read with a wrong key.
    const keyless = await serve({ ...common, store, checkpointKey: KEY });
    const page = await (await keyless.get("/runs/enc-done")).text();
    expect(page).toContain("Encrypted: its latest checkpoint verifies with the key");
    expect(page).not.toContain("charged $80");
    const listed = (await (await keyless.get("/api/runs")).json()) as RunList;
    expect(listed.runs.map((run) => run.problemCode)).toEqual(["ENCRYPTED", "ENCRYPTED"]);
    expect(await (await keyless.get("/")).text()).not.toContain("wrong key?");

    // A changed byte of an encrypted checkpoint is corruption, with the key or without it.
    const changed = await serve({ ...common, store: changedLatest(store), checkpointKey: KEY });
    const corrupt = (await (await changed.get("/api/runs")).json()) as RunList;
    expect(corrupt.runs.map((run) => run.problemCode)).toEqual([
      "CHECKPOINT_STORE_CORRUPT",
      "CHECKPOINT_STORE_CORRUPT",
    ]);
  });

  it("approves a pending call of an encrypted run, which the worker then finishes", async () => {
    const store = await seeded("enc-act", encrypted);
    const actor = await serve({
      ...common,
      store,
      checkpointKey: KEY,
      encryptionKey: ENCRYPTION_KEY,
      allowActions: true,
    });
    const before = await actor.detail("enc-act-paused");
    const posted = await act(actor, "enc-act-paused", {
      action: "approve",
      "call.0": before.pending[0]?.callId ?? "",
      "approve.0": "approve",
    });
    expect(posted.status).toBe(303);
    // Judged from the store, not through the console: the run's plain status, then its log opened with the workers' keys.
    const w = worker(store, events, encrypted);
    try {
      await untilStored(store, "enc-act-paused", "done");
    } finally {
      await w.stop();
    }
    const log = await readCallLog(store, Sealer.withKeys(KEY, ENCRYPTION_KEY), "enc-act-paused", []);
    expect(log.find((r) => r.tool === "refund" && r.kind === "done")?.result).toBe("refunded $80");
  });

  it("decides a call in doubt of an encrypted run, which the worker then replays", async () => {
    const store = new SQLiteCheckpointStore(join(dir, "enc-doubt.db"));
    stores.push(store);
    const r = runner(store, events, encrypted);
    hangingEmails.add("enc-doubt");
    await r.run(orders, { show: "Hamlet", seats: 2 }, { runId: "enc-doubt" }).catch(() => undefined);
    hangingEmails.delete("enc-doubt");
    await expect(r.recover(orders, "enc-doubt")).rejects.toThrow(RecoveryNeedsDecision);
    const actor = await serve({
      ...common,
      store,
      checkpointKey: KEY,
      encryptionKey: ENCRYPTION_KEY,
      allowActions: true,
    });
    const call = (await actor.detail("enc-doubt")).inDoubt[0];
    const posted = await act(actor, "enc-doubt", {
      action: "decide",
      call: call?.callId ?? "",
      decision: "result",
      result: '"mailed by hand"',
    });
    expect(posted.status).toBe(303);
    const w = worker(store, events, encrypted);
    try {
      await untilStored(store, "enc-doubt", "done");
    } finally {
      await w.stop();
    }
    const log = await readCallLog(store, Sealer.withKeys(KEY, ENCRYPTION_KEY), "enc-doubt", []);
    expect(log.find((rec) => rec.tool === "email_tickets" && rec.kind === "decided")).toMatchObject({ by: "ops@test" });
  });

  it("sends an event sealed with the workers' encryption key, shown with it; read without it, events are withheld", async () => {
    const store = new SQLiteCheckpointStore(join(dir, "enc-event.db"));
    stores.push(store);
    await runner(store, events, encrypted).run(payments, {}, { runId: "enc-pay" });
    const actor = await serve({ ...common, store, ...encrypted, allowActions: true });
    const fields = { action: "send-event", name: "paid", payload: '{"cents":7}', key: "enc-1" };
    expect((await act(actor, "enc-pay", fields)).status).toBe(303);
    expect((await actor.detail("enc-pay")).inbox?.events).toMatchObject([
      { seq: 0, key: "enc-1", name: "paid", payload: { cents: 7 } },
    ]);
    const [row] = (await store.inbox?.("enc-pay")) ?? [];
    expect(Sealer.withKeys(KEY).verifiesEncrypted("event", row?.sealed ?? "")).toBe(true);

    // A plain run sent an event sealed encrypted (by a sender with the key), read without it: withheld, not corrupt.
    await runner(store, events).run(payments, {}, { runId: "plain-pay" });
    const sent = { runId: "plain-pay", name: "paid", payload: "a secret", idempotencyKey: "enc-2" };
    await sendEvent({ checkpoints: store, ...encrypted, ...sent });
    const keyless = await serve({ ...common, store, checkpointKey: KEY });
    expect((await keyless.detail("plain-pay")).inbox).toEqual({ events: [{ seq: 0, key: "enc-2" }], withheld: true });
    const page = await (await keyless.get("/runs/plain-pay")).text();
    expect(page).toContain("encrypted, and the console has no encryption key to show them");
    expect(page).not.toContain("a secret");
  });
});

describe("the console on Ed25519-signed runs", () => {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");

  it("reads and verifies them with the public key alone", async () => {
    const store = await seeded("ed", { checkpointKey: privateKey });
    const reader = await serve({ ...common, store, checkpointKey: publicKey });
    expect((await reader.detail("ed-done")).status).toBe("done");
    expect((await reader.detail("ed-paused")).pending.map((call) => call.tool)).toEqual(["refund"]);
  });

  it("refuses to serve actions with a public key, which cannot sign what an action records", async () => {
    const store = await seeded("ed-act", { checkpointKey: privateKey });
    await expect(serve({ ...common, store, checkpointKey: publicKey, allowActions: true })).rejects.toThrow(
      InvalidInput,
    );
    await expect(serve({ ...common, store, checkpointKey: publicKey, allowActions: true })).rejects.toThrow(
      /an Ed25519 public key only verifies/,
    );
  });
});
