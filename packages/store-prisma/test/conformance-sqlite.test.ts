import { afterAll } from "vitest";
import { runConformance } from "@durable/conformance";
import { initializer, removeSqlite, sqliteUrl } from "./databases.js";

// A new SQLite file per store, in this test file's own folder.
afterAll(removeSqlite);
runConformance(initializer("prisma, SQLite", sqliteUrl));
