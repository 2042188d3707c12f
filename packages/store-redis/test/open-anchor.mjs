// Opens the kit's anchor in its child processes: a SQLite file (the handle is its path), a second place beside the store.
import { SQLiteRunAnchor } from "@durable/store-sqlite";

export default (path) => new SQLiteRunAnchor(path);
