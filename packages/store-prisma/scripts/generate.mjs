// Generates the Prisma client of each provider from prisma/models.prisma, the
// one copy of the models (it ships, for users who generate their own client).
// `prisma generate` asks for a schema-engine binary it never runs here; it
// cannot be downloaded on every machine, so this points it at a stub, for this
// command only.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const path = (relative) => fileURLToPath(new URL(relative, import.meta.url));
const stub = path("./stub-schema-engine.sh");
const prisma = path("../node_modules/.bin/prisma");
const models = readFileSync(path("../prisma/models.prisma"), "utf8");
// The schema sits beside the models, and names its output relative to itself: the client inlines its
// schema, which would otherwise carry this machine's path into the published package.
const work = mkdtempSync(path("../prisma/.generate-"));
try {
  for (const provider of ["postgresql", "sqlite"]) {
    const schema = join(work, `${provider}.prisma`);
    const output = `../../src/generated/${provider}`;
    writeFileSync(
      schema,
      `generator client {\n  provider = "prisma-client"\n  output   = ${JSON.stringify(output)}\n}\n\ndatasource db {\n  provider = "${provider}"\n}\n\n${models}`,
    );
    execFileSync(prisma, ["generate", "--schema", schema], {
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: stub, PRISMA_HIDE_UPDATE_MESSAGE: "1" },
    });
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
