import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JsonValue } from "@durable/core";
import { DurableRun, envelopeJson, type JsonObject, Sealer } from "@durable/core/runner";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ListedRun, type RunningConsole, startConsole } from "../src/index.js";
import { detail, get } from "./client.js";
import { KEY, orders, runner } from "./fixture.js";

/*
 * Where a run comes from, as its checkpoint's data says and the console
 * shows: the version of the code that started it (`version`), and the run
 * and step it was forked from (`forkedFrom`). Runs are started here with
 * those fields in their step 0 as a runner that records them would, left to
 * the fleet (no lease): no worker of their version claims them.
 */

const dir = mkdtempSync(join(tmpdir(), "durable-console-origin-"));
const store = new SQLiteCheckpointStore(join(dir, "runs.db"));
const ids = { versioned: "o-versioned", forked: "o-forked", plain: "o-plain", odd: "o-odd" };
let reader: RunningConsole;

/** Starts a run of the orders flow at its first node with `extra` beside its envelope, leased to no one. */
async function startWith(runId: string, extra: JsonObject): Promise<void> {
  const program: JsonValue = { state: { show: "Hamlet", seats: 2, note: "" }, frontier: ["hold"], visits: {} };
  const envelope = envelopeJson({ round: 1, pending: [], answers: [], program });
  const sealer = Sealer.withKeys(KEY);
  const init = { store, sealer, runId, name: "orders", kind: "flow", identity: {}, leased: false } as const;
  const { run } = await DurableRun.start({ ...init, data: { ...envelope, ...extra } });
  await run.stopLease(true);
}

beforeAll(async () => {
  await startWith(ids.versioned, { version: "2.1" });
  await startWith(ids.forked, { version: 7, forkedFrom: { runId: ids.plain, step: 1 } });
  await startWith(ids.odd, { version: { major: 2 } });
  await runner(store, join(dir, "events.jsonl")).run(orders, { show: "Lear", seats: 1 }, { runId: ids.plain });
  reader = await startConsole({ store, checkpointKey: KEY, label: "sqlite", port: 0 });
}, 60_000);

afterAll(async () => {
  await reader?.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const page = async (runId: string) => (await get(reader, `/runs/${encodeURIComponent(runId)}`)).text();

describe("a run's version and the run it was forked from", () => {
  it("are in the run's JSON when its data holds them, and left out when absent or of another shape", async () => {
    expect(await detail(reader, ids.versioned)).toMatchObject({ version: "2.1" });
    expect(await detail(reader, ids.forked)).toMatchObject({ version: 7, forkedFrom: { runId: ids.plain, step: 1 } });
    for (const runId of [ids.plain, ids.odd]) {
      const run = await detail(reader, runId);
      expect(run.version).toBeUndefined();
      expect(run.forkedFrom).toBeUndefined();
    }
  });

  it("a claimable run with a version waits for a worker of that version; its head names the version", async () => {
    const html = await page(ids.versioned);
    expect(html).toContain('version <code class="version">2.1</code>');
    expect(html).toContain("Waiting for a worker of version <code>2.1</code>");
    // A version no runner seals (an object) makes the envelope corrupt: the run does not read.
    expect(await page(ids.odd)).toContain("is not a run envelope of this version");
  });

  it("a fork's head links to the run and step it was forked from", async () => {
    expect(await page(ids.forked)).toContain(
      `<p class="forked-from">Forked from <a href="/runs/${ids.plain}">${ids.plain}</a> at step 1.</p>`,
    );
    expect(await page(ids.plain)).not.toContain("Forked from");
  });

  it("the list has a version column when a run of its page has one, and none when none has", async () => {
    const list = (await (await get(reader, "/api/runs")).json()) as { runs: ListedRun[] };
    expect(new Map(list.runs.map((run) => [run.runId, run.version]))).toEqual(
      new Map<string, string | number | undefined>([
        [ids.versioned, "2.1"],
        [ids.forked, 7],
        [ids.odd, undefined],
        [ids.plain, undefined],
      ]),
    );
    const html = await (await get(reader, "/")).text();
    expect(html).toContain('<th scope="col">version</th>');
    expect(html).toMatch(new RegExp(`data-run-id="${ids.versioned}"[^]*?<td class="version">2\\.1</td>`));
    expect(html).toMatch(new RegExp(`data-run-id="${ids.plain}"[^]*?<td class="version">—</td>`));
    const plainOnly = await (await get(reader, `/?q=${ids.plain}`)).text();
    expect(plainOnly).not.toContain('<th scope="col">version</th>');
  });

  it("the list filtered by a name counts its unfinished runs by version; a run that does not verify hides the count", async () => {
    const line = /<p class="versions meta" role="status">(.*?)<\/p>/;
    expect((await (await get(reader, "/?name=orders")).text()).match(line)).toBeNull();
    await store.delete(ids.odd);
    const html = await (await get(reader, "/?name=orders")).text();
    const counted = html.match(line)?.[1] ?? "";
    expect(counted).toContain("version <code>2.1</code>: 1 run</span>");
    expect(counted).toContain("version <code>7</code>: 1 run</span>");
    // The done run counts for nothing: only runs left for a worker do.
    expect(counted).not.toContain("no version");
    expect(await (await get(reader, "/")).text()).not.toMatch(line);
  });
});
