import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CheckpointStore } from "@durable/core";
import { PrismaCheckpointStore } from "@durable/store-prisma";
import { RedisCheckpointStore } from "@durable/store-redis";
import { SQLiteCheckpointStore } from "@durable/store-sqlite";
import { adminQuery, ownDatabase, postgresAnswers } from "@durable/test-utils/postgres";
import { dropKeys, REDIS_URL, redisAdmin, redisAnswers } from "@durable/test-utils/redis";
import Database from "better-sqlite3";
import type { Browser } from "playwright-core";
import { createClient } from "redis";
import { describe, expect, it } from "vitest";
import { type RunningConsole, startConsole } from "../src/index.js";
import { headlessChromium } from "@durable/test-utils/chromium";
import { KEY, orders, runner } from "./fixture.js";

/*
 * A store's plain columns (a run's kind, status, step, segment, last change)
 * are anyone's to write who can write the store: the console must never print
 * them as markup, nor show them as the run's truth. Each case writes markup
 * into the plain columns of a real row, past the store, and opens the list in
 * Chromium.
 */

/** A tag that, printed as markup, sends the page away at once. */
const MARKUP = `<meta http-equiv="refresh" content="0;url=about:blank"><b id="injected">x</b>`;

/** A store of one kind, and how to write its run head's plain columns past it. */
interface Backend {
  readonly name: string;
  readonly available: () => Promise<boolean>;
  open(): Promise<{
    store: CheckpointStore;
    /** Sets the head's columns of `runId` as given (SQL text, or Redis hash fields). */
    write(runId: string, columns: Readonly<Record<string, string>>): Promise<void>;
    dispose(): Promise<void>;
  }>;
}

const BACKENDS: readonly Backend[] = [
  {
    name: "SQLite",
    available: async () => true,
    async open() {
      const dir = mkdtempSync(join(tmpdir(), "durable-console-columns-"));
      const store = new SQLiteCheckpointStore(join(dir, "runs.db"));
      return {
        store,
        async write(runId, columns) {
          const db = new Database(store.path, { timeout: 5000 });
          try {
            const set = Object.keys(columns).map((column) => `${column} = @${column}`);
            db.prepare(`UPDATE ${store.tables.runs} SET ${set.join(", ")} WHERE run_id = @runId`).run({
              ...columns,
              runId,
            });
          } finally {
            db.close();
          }
        },
        dispose: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
  {
    name: "Redis",
    available: redisAnswers,
    async open() {
      const prefix = `console-columns-${Math.random().toString(36).slice(2, 10)}`;
      const store = new RedisCheckpointStore(() => createClient({ url: REDIS_URL }), { prefix });
      const admin = await redisAdmin();
      return {
        store,
        async write(runId, columns) {
          await admin.hSet(store.keysOf(runId).meta, columns);
        },
        async dispose() {
          await admin.close();
          await dropKeys(RedisCheckpointStore.keyPattern(prefix));
        },
      };
    },
  },
  {
    name: "PostgreSQL",
    available: postgresAnswers,
    async open() {
      const db = ownDatabase("console_columns");
      await db.create();
      const store = new PrismaCheckpointStore(db.url);
      await store.migrate();
      return {
        store,
        async write(runId, columns) {
          const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;
          const set = Object.entries(columns).map(([column, value]) => `"${column}" = ${quote(value)}`);
          await adminQuery(
            db.url,
            `UPDATE "public"."durable_runs" SET ${set.join(", ")} WHERE run_id = ${quote(runId)}`,
          );
        },
        dispose: () => db.drop(),
      };
    },
  },
];

const chromium = headlessChromium();

describe.each(BACKENDS)("plain columns written past the $name store", (backend) => {
  it("are printed as text, the row shows what the sealed checkpoint says, the disagreement is marked corrupt, and a last change no date has is shown as none", async (ctx) => {
    if (chromium.browser === undefined || !(await backend.available())) return ctx.skip();
    const { store, write, dispose } = await backend.open();
    const dir = mkdtempSync(join(tmpdir(), "durable-console-columns-events-"));
    let console_: RunningConsole | undefined;
    try {
      const r = runner(store, join(dir, "events.jsonl"));
      const tag = Math.random().toString(36).slice(2, 8);
      const [forged, intact] = [`${tag}-forged`, `${tag}-intact`];
      await r.run(orders, { show: "Hamlet", seats: 2 }, { runId: forged });
      await r.run(orders, { show: "Lear", seats: 1 }, { runId: intact });
      await write(forged, { kind: MARKUP, status: MARKUP });
      // A last change no date has (SQL stores keep it in a column; Redis, as an index's score).
      if (backend.name !== "Redis") await write(intact, { updated_at: "9000000000000000000" });
      console_ = await startConsole({ store, checkpointKey: KEY, label: backend.name, port: 0 });
      const page = await (chromium.browser as Browser).newPage();
      try {
        await page.goto(console_.url);
        const row = page.locator(`table.runs tbody tr[data-run-id="${forged}"]`);
        await row.waitFor();
        // Long enough for a meta refresh of 0 s to have fired, had it been markup.
        await page.waitForTimeout(500);
        expect(new URL(page.url()).origin).toBe(new URL(console_.url).origin);
        expect(await page.locator("#injected").count()).toBe(0);
        expect(await page.locator("meta[http-equiv]").count()).toBe(0);
        // What the sealed checkpoint says, with the disagreement marked; or, where the store itself refuses the
        // malformed head (Redis reads it in its scripts), the store's CheckpointStoreCorrupt beside the columns, as text.
        const [, kind, status] = await row.locator("td").allTextContents();
        const problem = await row.locator(".problem").textContent();
        if (kind === "flow") {
          expect(status).toContain("done");
          expect(problem).toMatch(
            /^CheckpointStoreCorrupt: the store lists it with kind ".*<meta.*", status ".*", its sealed checkpoint says kind "flow", status "done"/,
          );
        } else {
          expect(kind).toBe(MARKUP);
          expect(problem).toContain(`CheckpointStoreCorrupt: Run "${forged}": `);
        }
        const untouched = page.locator(`table.runs tbody tr[data-run-id="${intact}"]`);
        expect(await untouched.locator(".problem").count()).toBe(0);
        if (backend.name !== "Redis") expect((await untouched.locator("td").allTextContents()).at(-1)).toBe("—");
      } finally {
        await page.close();
      }
    } finally {
      await console_?.close();
      await store.close();
      await dispose();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
