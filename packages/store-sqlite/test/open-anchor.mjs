// Opens the SQLite anchor in the conformance kit's child processes: the handle is the anchor file's path.
// Plain JavaScript on the built package, as open-store.mjs.
import { SQLiteRunAnchor } from "../dist/index.js";

export default (path) => new SQLiteRunAnchor(path);
