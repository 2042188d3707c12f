import { randomUUID } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join } from "node:path";
import { pathToFileURL } from "node:url";
import type { RunAnchor } from "@durable/core/store";
import type { AnchorCapability } from "../harness/initializer.js";

/** Names the anchor a worker process writes through, as JSON `AnchorHandle` (the anchor group's workers). */
export const ANCHOR_VARIABLE = "DURABLE_KIT_ANCHOR";

/** An anchor as a process opens it: its opener module and its handle. */
export interface AnchorHandle {
  readonly opener: string;
  readonly handle: string;
}

/** An anchor the kit opened, with `close` when it has one. */
export type KitAnchor = RunAnchor & { close?(): Promise<void> };

/** Opens the anchor of `handle` with the opener module's default export, in the test or in a worker. */
export async function openAnchor({ opener, handle }: AnchorHandle): Promise<KitAnchor> {
  const module = (await import(isAbsolute(opener) ? pathToFileURL(opener).href : opener)) as {
    default: (handle: string) => KitAnchor | Promise<KitAnchor>;
  };
  return module.default(handle);
}

/**
 * The anchor capability of an anchor kept in a file (`SQLiteRunAnchor`): each
 * handle a new file in the system's temp folder, removed with its WAL files.
 */
export function anchorInFiles(opener: string): AnchorCapability {
  const dir = join(tmpdir(), "durable-anchors");
  return {
    opener,
    newHandle() {
      mkdirSync(dir, { recursive: true });
      return join(dir, `${randomUUID()}.db`);
    },
    remove(path) {
      for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
    },
  };
}
