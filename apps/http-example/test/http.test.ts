import { describe, expect, it } from "vitest";
import { examples, post } from "./example.js";

// The example as its users run it: a server process and a worker process on one SQLite file, talked to over HTTP.

const example = examples();

/** GETs the run until it is done (or 20 s passed). */
async function doneRun(base: string, runId: string): Promise<Record<string, unknown>> {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    const run = (await (await fetch(`${base}/runs/${runId}`)).json()) as Record<string, unknown>;
    if (run["status"] === "done") return run;
  }
  throw new Error(`run ${runId} was not done after 20 s`);
}

describe("the HTTP example, a server and a worker process on one SQLite file", () => {
  it("POST /runs answers 202 { runId } at once; the worker runs it; GET /runs/:id gives its result; the tool ran once", async () => {
    const { base, sent } = await example();
    const started = await post(`${base}/runs`, { name: "Ada" }, { "idempotency-key": "greet-ada" });
    expect(started).toEqual({ status: 202, body: { runId: "greet-ada" } });
    expect(await doneRun(base, "greet-ada")).toMatchObject({
      status: "done",
      result: { name: "Ada", message: "hello Ada" },
    });
    expect(sent()).toEqual([JSON.stringify({ runId: "greet-ada", name: "Ada" })]);

    // A retried POST (same Idempotency-Key): the same run, nothing new started, the tool not run again.
    expect(await post(`${base}/runs`, { name: "Ada" }, { "idempotency-key": "greet-ada" })).toEqual({
      status: 202,
      body: { runId: "greet-ada" },
    });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(sent()).toHaveLength(1);
    expect(await doneRun(base, "greet-ada")).toMatchObject({ status: "done" });
  }, 60_000);

  it("with no worker, POST /drain runs what is queued, as a cron-triggered route would", async () => {
    const { base, sent } = await example({ worker: false });
    const { body } = await post(`${base}/runs`, { name: "Bob" });
    expect(await (await fetch(`${base}/runs/${String(body["runId"])}`)).json()).toMatchObject({ status: "queued" });
    expect(await post(`${base}/drain`, {})).toMatchObject({
      status: 200,
      body: { finished: 1, gaveUp: 0, left: false },
    });
    expect(await doneRun(base, String(body["runId"]))).toMatchObject({ result: { message: "hello Bob" } });
    expect(sent()).toHaveLength(1);
  }, 60_000);

  it("answers a bad request with 400 and an unknown run with 404, each with its error", async () => {
    const { base } = await example({ worker: false });
    expect(await post(`${base}/runs`, { name: 5 })).toMatchObject({ status: 400, body: { error: expect.any(String) } });
    const response = await fetch(`${base}/runs/no-such-run`);
    expect(response.status).toBe(404);
  }, 60_000);
});
