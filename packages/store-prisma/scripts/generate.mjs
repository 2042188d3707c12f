// Generates the Prisma clients of both providers. `prisma generate` asks for a
// schema-engine binary it never runs here; it cannot be downloaded on every
// machine, so this points it at a stub, for this command only.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const stub = fileURLToPath(new URL("./stub-schema-engine.sh", import.meta.url));
const prisma = fileURLToPath(new URL("../node_modules/.bin/prisma", import.meta.url));
for (const provider of ["postgresql", "sqlite"]) {
  execFileSync(prisma, ["generate", "--schema", `prisma/${provider}.prisma`], {
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: stub, PRISMA_HIDE_UPDATE_MESSAGE: "1" },
  });
}
