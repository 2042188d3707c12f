import { mkdtempSync, rmSync } from "node:fs";
import { type IncomingMessage, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CheckpointStore } from "@durable/core";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Guard } from "../src/auth.js";
import { type RunDetail, type RunningConsole, startConsole } from "../src/index.js";
import { act as actOn, detail as detailOf, formToken, get, post } from "./client.js";
import { failingCharges, KEY, seed, type Seeded, worker } from "./fixture.js";

const TOKEN = "console-test-token-0123456789";
const dir = mkdtempSync(join(tmpdir(), "durable-console-"));
const events = join(dir, "events.jsonl");
let store: CheckpointStore;
let runs: Seeded;
let reader: RunningConsole;
let actor: RunningConsole;

const auth = { authorization: `Bearer ${TOKEN}` };
const detail = (runId: string): Promise<RunDetail> => detailOf(reader, runId);
/** Posts an action as a run's page would: its form token, the step it shows. */
const act = (runId: string, fields: Record<string, string>, step?: number, headers?: Record<string, string>) =>
  actOn(actor, runId, fields, step, headers);

/** A GET to the console's address naming `headers.host` (fetch may not set Host): as a browser on that name would. */
function getAs(c: RunningConsole, path: string, headers: Record<string, string>) {
  return new Promise<{ status: number | undefined; headers: Record<string, string | string[] | undefined> }>(
    (resolve, reject) => {
      const { hostname, port } = new URL(c.api);
      request({ hostname, port, path, headers }, (response) => {
        response.resume();
        resolve({ status: response.statusCode, headers: response.headers });
      })
        .on("error", reject)
        .end();
    },
  );
}

/** Waits until the run's status is `status` (the worker acts on what an action recorded). */
async function until(runId: string, status: string): Promise<RunDetail> {
  await expect.poll(async () => (await detail(runId)).status, { timeout: 10_000, interval: 50 }).toBe(status);
  return detail(runId);
}

beforeAll(async () => {
  store = new SQLiteCheckpointStore(join(dir, "runs.db"));
  runs = await seed(store, events);
  const common = { store, checkpointKey: KEY, label: "sqlite:runs.db", port: 0, token: TOKEN, events, by: "ops@test" };
  reader = await startConsole(common);
  actor = await startConsole({ ...common, allowActions: true });
}, 60_000);

afterAll(async () => {
  await reader?.close();
  await actor?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the console reads", () => {
  it("needs its token: none is 401; the printed URL, on the console's own name, sets a cookie and redirects without it", async () => {
    expect((await get(reader, "/", {})).status).toBe(401);
    expect((await get(reader, "/", { authorization: "Bearer wrong-token-0123456789" })).status).toBe(401);
    const own = new URL(reader.url).host;
    expect(own).toMatch(/^[0-9a-f]{16}\.localhost:\d+$/);
    // Opened by its address, the printed URL goes to the console's own name first: no cookie for 127.0.0.1.
    const byAddress = await getAs(reader, `/?token=${TOKEN}`, { host: new URL(reader.api).host });
    expect(byAddress.status).toBe(303);
    expect(byAddress.headers["location"]).toBe(`http://${own}/?token=${TOKEN}`);
    expect(byAddress.headers["set-cookie"]).toBeUndefined();
    const login = await getAs(reader, `/?token=${TOKEN}`, { host: own });
    expect(login.status).toBe(303);
    expect(login.headers["location"]).toBe("/");
    const [cookie = ""] = (login.headers["set-cookie"] as string[] | undefined) ?? [];
    expect(cookie).toMatch(/HttpOnly; SameSite=Strict/);
    expect(cookie).not.toMatch(/Domain=/i);
    const pair = cookie.split(";")[0] ?? "";
    expect((await getAs(reader, "/", { host: own, cookie: pair })).status).toBe(200);
  });

  it("takes its cookie only on its own name: sent to another loopback host or port, the cookie reads nothing", async () => {
    const login = await getAs(reader, `/?token=${TOKEN}`, { host: new URL(reader.url).host });
    const [cookie = ""] = (login.headers["set-cookie"] as string[] | undefined) ?? [];
    const pair = cookie.split(";")[0] ?? "";
    const { port } = new URL(reader.api);
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `other.localhost:${port}`])
      expect((await getAs(reader, "/", { host, cookie: pair })).status, host).toBe(401);
    // Its form token is its own: not derived from the token a cookie carries.
    const csrf = await formToken(actor, runs.paused);
    const other = await startConsole({
      store,
      checkpointKey: KEY,
      label: "x",
      port: 0,
      token: TOKEN,
      allowActions: true,
    });
    try {
      expect(await formToken(other, runs.paused)).not.toBe(csrf);
    } finally {
      await other.close();
    }
  });

  it("on HTTP's own port takes its cookie on its name as browsers send it, without the port", () => {
    const guard = new Guard(TOKEN, "127.0.0.1", 80);
    const name = guard.host.replace(/:80$/, "");
    const from = (host: string) => ({ headers: { host, cookie: `${guard.cookie}=${TOKEN}` } }) as IncomingMessage;
    expect(guard.check(from(name))).toBe("ok");
    expect(guard.check(from("127.0.0.1"))).toBe("no token");
  });

  it("answers only requests that name a loopback host (no DNS rebinding)", async () => {
    // fetch may not set Host: a plain request names another host, as a rebound DNS name would.
    const { status } = await getAs(reader, "/", { ...auth, host: "evil.example" });
    expect(status).toBe(421);
  });

  it("lists runs of every status newest first, with marks, filtered by status, name and run id prefix", async () => {
    const list = (query: string) =>
      get(reader, `/api/runs${query}`).then(
        async (r) => (await r.json()) as { runs: Array<{ runId: string; status: string; marks: string[] }> },
      );
    const all = (await list("")).runs;
    const byId = new Map(all.map((run) => [run.runId, run]));
    expect(byId.get(runs.done)?.status).toBe("done");
    expect(byId.get(runs.paused)?.marks).toContain("needs approval");
    expect(byId.get(runs.failed)?.status).toBe("failed");
    expect(byId.get(runs.inDoubt)?.marks).toEqual(["needs decision"]);
    expect((await list("?status=failed")).runs.map((r) => r.runId)).toContain(runs.failed);
    expect((await list("?status=failed")).runs.every((r) => r.status === "failed")).toBe(true);
    expect((await list("?name=refunds")).runs.map((r) => r.runId)).toEqual([runs.paused]);
    expect((await list(`?q=${encodeURIComponent(runs.loop)}`)).runs.map((r) => r.runId)).toEqual([runs.loop]);
    expect((await get(reader, "/api/runs?cursor=bad")).status).toBe(400);
  });

  it("shows a run's timeline with each step's changes, its calls marked, and a loop's messages", async () => {
    const done = await detail(runs.done);
    expect(done.steps.map((s) => s.step)).toEqual([0, 1, 2, 3]);
    expect(done.steps[1]?.changes).toEqual(
      expect.arrayContaining([{ path: "$.state.note", before: "", after: "held 2 for Hamlet" }]),
    );
    expect(done.calls.map((c) => [c.tool, c.state, c.marks])).toEqual([
      ["hold_seats", "done", ["ran"]],
      ["charge_card", "done", ["ran"]],
      ["email_tickets", "done", ["ran"]],
    ]);
    expect(done.calls[1]?.idempotencyKey).toMatch(/^[\w-]{43}$/);
    expect(done.calls[0]?.durationsMs).toHaveLength(1);
    const doubt = await detail(runs.inDoubt);
    expect(doubt.inDoubt.map((c) => c.tool)).toEqual(["email_tickets"]);
    expect(doubt.calls.find((c) => c.tool === "email_tickets")?.state).toBe("in doubt");
    const loop = await detail(runs.loop);
    expect(loop.kind).toBe("loop");
    expect(loop.messages?.map((m) => (m as { role: string }).role)).toEqual(["user", "assistant", "tool", "assistant"]);
  });

  it("escapes run ids and state, and never sends the key", async () => {
    const list = await (await get(reader, "/")).text();
    expect(list).not.toContain("<script>alert(1)</script>");
    expect(list).toContain("&#60;script&#62;alert(1)&#60;/script&#62;");
    const page = await (await get(reader, `/runs/${encodeURIComponent(runs.hostile)}`)).text();
    expect(page).not.toContain("<b>Lear</b>");
    expect(page).not.toMatch(/<script>alert/);
    for (const path of ["/", `/runs/${encodeURIComponent(runs.done)}`, "/api/runs", `/api/runs/${runs.done}`])
      expect(await (await get(reader, path)).text()).not.toContain(KEY);
    const headers = (await get(reader, "/")).headers;
    expect(headers.get("content-security-policy")).toContain("script-src 'self'");
  });

  it("without --allow-actions shows no action and refuses a post", async () => {
    const page = await (await get(reader, `/runs/${encodeURIComponent(runs.paused)}`)).text();
    expect(page).not.toContain('action="approve"');
    const refused = await post(reader, runs.paused, { action: "cancel", reason: "x", step: "1" });
    expect(refused.status).toBe(403);
  });
});

describe("the console acts (--allow-actions), and the worker serving the run acts on it", () => {
  it("refuses a post without the page's form token, and one for a step the run has left", async () => {
    const forged = await post(actor, runs.paused, { action: "cancel", reason: "x", step: "1" });
    expect(forged.status).toBe(403);
    const stale = await act(runs.paused, { action: "cancel", reason: "stale" }, 0);
    expect(stale.status).toBe(409);
    expect(await stale.text()).toContain("changed since step 0");
    expect((await detail(runs.paused)).status).toBe("paused");
  });

  it("refuses a post from another site's page (its Origin, or Sec-Fetch-Site), even with both tokens", async () => {
    const own = `http://${new URL(actor.url).host}`;
    for (const headers of [
      { origin: "http://evil.example" } as Record<string, string>,
      { origin: `http://other.localhost:${new URL(actor.api).port}` },
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" },
    ]) {
      const refused = await act(runs.paused, { action: "cancel", reason: "forged" }, undefined, headers);
      expect(refused.status, JSON.stringify(headers)).toBe(403);
      expect(await refused.text()).toContain("posted from another site");
    }
    expect((await detail(runs.paused)).status).toBe("paused");
    // The console's own pages post with their origin, or "null" under their no-referrer policy: past this guard,
    // the stale step refuses the post.
    const owns: Record<string, string>[] = [
      { origin: own },
      { origin: "null", "sec-fetch-site": "same-origin" },
      { origin: actor.api },
    ];
    for (const headers of owns)
      expect((await act(runs.paused, { action: "cancel", reason: "x" }, 0, headers)).status).toBe(409);
  });

  it("approves a pending call, records who did, and the worker finishes the run", async () => {
    const w = worker(store, events);
    try {
      const before = await detail(runs.paused);
      const posted = await act(runs.paused, {
        action: "approve",
        "call.0": before.pending[0]?.callId ?? "",
        "approve.0": "approve",
        "reason.0": "customer asked",
      });
      expect(posted.status).toBe(303);
      const after = await until(runs.paused, "done");
      expect(after.steps.find((s) => s.operator !== undefined)?.operator).toMatchObject({
        action: "approve",
        by: "ops@test",
      });
      expect(after.calls.find((c) => c.tool === "refund")?.result).toBe("refunded $80");
    } finally {
      await w.stop();
    }
  });

  it("decides a call in doubt (it happened, with this result), and the worker replays it", async () => {
    const w = worker(store, events);
    try {
      const call = (await detail(runs.inDoubt)).inDoubt[0];
      const posted = await act(runs.inDoubt, {
        action: "decide",
        call: call?.callId ?? "",
        decision: "result",
        result: '"mailed by hand"',
      });
      expect(posted.status).toBe(303);
      const after = await until(runs.inDoubt, "done");
      const email = after.calls.find((c) => c.tool === "email_tickets");
      expect(email?.decided).toMatchObject({ decision: "result", by: "ops@test" });
      expect(email?.result).toBe("mailed by hand");
    } finally {
      await w.stop();
    }
  });

  it("retries a failed run, and the worker drives it to done with the failed call run again", async () => {
    const w = worker(store, events);
    try {
      failingCharges.delete(runs.failed);
      expect((await act(runs.failed, { action: "retry" })).status).toBe(303);
      const after = await until(runs.failed, "done");
      const charge = after.calls.find((c) => c.tool === "charge_card");
      expect(charge?.marks).toEqual(expect.arrayContaining(["reopened", "rerun"]));
      expect(after.steps.some((s) => s.operator?.action === "retry")).toBe(true);
    } finally {
      await w.stop();
    }
  });

  it("cancels a run with a reason; a cancelled run offers no retry", async () => {
    const { runs: fresh } = await seedOne();
    const posted = await act(fresh, { action: "cancel", reason: "duplicate order" });
    expect(posted.status).toBe(303);
    const after = await detail(fresh);
    expect(after).toMatchObject({ status: "failed", cancelled: true });
    expect(after.steps.at(-1)?.operator).toMatchObject({ action: "cancel", by: "ops@test", reason: "duplicate order" });
    expect(await (await get(actor, `/runs/${encodeURIComponent(fresh)}`)).text()).not.toContain('value="retry"');
  });
});

/** A fresh paused run of its own. */
async function seedOne(): Promise<{ runs: string }> {
  const seeded = await seed(store, events);
  return { runs: seeded.paused };
}
