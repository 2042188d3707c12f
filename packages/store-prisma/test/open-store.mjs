// Opens the Prisma store in the conformance kit's child processes: the handle is "<url> <table prefix>".
// Plain JavaScript on the built package, so a child starts without a TypeScript loader;
// the kit refuses to start one while that build is older than src/ (`pnpm build` rebuilds it).
import { PrismaCheckpointStore } from "../dist/index.js";

export default (handle) => {
  const [url, tablePrefix] = handle.split(" ");
  return new PrismaCheckpointStore(url, { tablePrefix });
};
