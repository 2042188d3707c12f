/** Opens a store on a path and reports it: used to open one new file from many processes at once. */
import { SQLiteCheckpointStore } from "../src/index.js";

const store = new SQLiteCheckpointStore(process.argv[2]!);
await store.close();
console.log("opened");
