export { PrismaCheckpointStore } from "./prisma-store.js";
export type { PrismaStoreOptions } from "./connection.js";
