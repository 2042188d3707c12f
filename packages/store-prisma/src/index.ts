export { PrismaCheckpointStore } from "./prisma-store.js";
export type { PrismaClientStoreOptions, PrismaStoreOptions } from "./connection.js";
export type { Client as PrismaClientLike } from "./client.js";
