export { SQLiteCheckpointStore, type SQLiteStoreOptions } from "./sqlite-store.js";
export { SCHEMA_VERSION } from "./schema.js";
