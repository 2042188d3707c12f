/** Opens the SQLite store a worker process uses: the argument is the file's path. */
import { SQLiteCheckpointStore } from "../src/index.js";

export default (path: string) => new SQLiteCheckpointStore(path);
