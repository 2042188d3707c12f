/** Opens the Prisma store a worker process uses: the argument is `<url> <table prefix>`, joined by a space. */
import { PrismaCheckpointStore } from "../src/index.js";

export default (arg: string) => {
  const [url, tablePrefix] = arg.split(" ") as [string, string];
  return new PrismaCheckpointStore(url, { tablePrefix });
};
