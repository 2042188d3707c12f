import { createServer } from "node:net";
import { MemoryCheckpointStore } from "@durable/core";
import { expect, it } from "vitest";
import { startConsole } from "../src/index.js";
import { KEY } from "./fixture.js";

/** A port free now, to serve on. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

it("answers a request that comes while it still checks the key on the newest runs at start", async () => {
  const store = new MemoryCheckpointStore();
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const listRuns = store.listRuns.bind(store);
  // The key check's listing waits until a request came in meanwhile.
  store.listRuns = async (query) => {
    await held;
    return listRuns(query);
  };
  const port = await freePort();
  const starting = startConsole({ store, checkpointKey: KEY, label: "memory", port });
  let answered: number | undefined;
  await expect
    .poll(async () => {
      answered = await fetch(`http://127.0.0.1:${port}/`).then(
        (reply) => reply.status,
        () => undefined,
      );
      return answered;
    })
    .toBe(401);
  release();
  const running = await starting;
  expect(running.keyCheck).toEqual({ runs: 0, unverified: 0 });
  await running.close();
});
