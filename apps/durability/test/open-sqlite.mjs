// Opens the SQLite store in the conformance kit's child processes: the handle is the file's path.
// Plain JavaScript on the store's build, so a child starts without a TypeScript loader;
// the kit refuses to start one while that build is older than its source (`pnpm build` rebuilds it).
import { SQLiteCheckpointStore } from "@durable/store-sqlite";

export default (path) => new SQLiteCheckpointStore(path);
