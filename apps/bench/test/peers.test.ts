import { describe, expect, it } from "vitest";
import type { Peer } from "../src/peers/peer.js";
import { memoryTarget, postgresTarget, sqliteTarget, type Target } from "../src/targets.js";

/** Starts a target's peers, has each complete one tickets run, closes them; a peer that did not start fails with its reason. */
async function oneRunEach(target: Target): Promise<string[]> {
  const started = (await target.peers?.()) ?? [];
  const peers = started.filter((p): p is Peer => typeof p !== "string");
  try {
    expect(started.filter((p) => typeof p === "string")).toEqual([]);
    for (const peer of peers) await peer.run(`smoke-${peer.name}`);
    return peers.map((p) => p.name);
  } finally {
    for (const peer of peers) await peer.close();
    await target.cleanup();
  }
}

// The peers' runners end to end, one run each; their figures are for `pnpm bench`, never asserted here.
describe("the peers, one run each", () => {
  it("LangGraph.js on its memory saver", async () => {
    expect(await oneRunEach(memoryTarget())).toHaveLength(2);
  });

  it("LangGraph.js on its SQLite saver", async () => {
    expect(await oneRunEach(sqliteTarget())).toHaveLength(2);
  });

  it("LangGraph.js on its PostgreSQL saver, and DBOS Transact", async (ctx) => {
    const target = await postgresTarget();
    if (typeof target === "string") return ctx.skip(target);
    expect(await oneRunEach(target)).toEqual([
      expect.stringContaining("PostgresSaver, durability sync"),
      expect.stringContaining("PostgresSaver, durability default"),
      expect.stringContaining("DBOS Transact"),
    ]);
  }, 30_000);
});
