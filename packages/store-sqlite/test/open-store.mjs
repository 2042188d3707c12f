// Opens the SQLite store in the conformance kit's child processes: the handle is the file's path.
// Plain JavaScript on the built package, so a child starts without a TypeScript loader;
// the kit refuses to start one while that build is older than src/ (`pnpm build` rebuilds it).
import { SQLiteCheckpointStore } from "../dist/index.js";

export default (path) => new SQLiteCheckpointStore(path);
