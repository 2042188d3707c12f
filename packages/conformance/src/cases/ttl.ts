import { CheckpointNotFound } from "@durable/core";
import { expect } from "vitest";
import type { ConformanceGroup } from "./case.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const ttlGroup: ConformanceGroup = {
  name: "ttl",
  proves: "a run's rows expire ttlSeconds after its last write, except while it is paused",
  skipUnless: (init) => (init.capabilities?.ttl === undefined ? "the store declares no `ttl` capability" : undefined),
  cases: [
    {
      name: "a finished run's checkpoints and records are gone after the TTL; a paused run's stay until it goes on",
      timeout: 120_000,
      async run(h) {
        const ttl = h.init.capabilities!.ttl!.ttlSeconds * 1000;
        const [finished, paused] = [h.runId("finished"), h.runId("paused")];
        await h.store.save(finished, 0, h.row(finished, 0));
        await h.recordCalls(finished, 0, 0, 2);
        await h.store.save(finished, 1, h.row(finished, 1, { status: "done" }));
        await h.store.save(paused, 0, h.row(paused, 0));
        await h.recordCalls(paused, 0, 0, 2);
        await h.store.save(paused, 1, h.row(paused, 1, { status: "paused" }));

        await sleep(ttl * 2 + 1000);
        await expect(h.store.latest(finished)).rejects.toBeInstanceOf(CheckpointNotFound);
        expect(await h.store.calls(finished)).toEqual([]);
        expect((await h.store.latest(paused)).status).toBe("paused");
        expect(await h.store.calls(paused)).toHaveLength(2);

        // Going on restores the expiry of every key of the run.
        await h.store.save(paused, 2, h.row(paused, 2, { status: "running" }));
        await sleep(ttl * 2 + 1000);
        await expect(h.store.latest(paused)).rejects.toBeInstanceOf(CheckpointNotFound);
        expect(await h.store.calls(paused)).toEqual([]);
      },
    },
  ],
};
