export { SQLiteCheckpointStore, type SQLiteStoreOptions } from "./sqlite-store.js";
export { SCHEMA_VERSION } from "./schema.js";
export { SQLiteRunAnchor, type SQLiteAnchorOptions } from "./sqlite-anchor.js";
