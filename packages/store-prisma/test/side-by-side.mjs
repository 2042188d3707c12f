// Runs the kit on PostgreSQL and the rest of the tests as two vitest processes at once. One vitest run takes
// its projects one after the other when their worker limits differ, and the rest must run one file at a time
// (see vitest.config.ts). Arguments are passed to both; the kit's report is .vitest/report-kit.json.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const vitest = fileURLToPath(new URL("../node_modules/.bin/vitest", import.meta.url));
const runs = [
  ["--project", "kit on PostgreSQL", "--outputFile.json=.vitest/report-kit.json"],
  ["--project", "the rest"],
];
const codes = await Promise.all(
  runs.map(
    (args) =>
      new Promise((resolve) =>
        spawn(vitest, ["run", ...args, ...process.argv.slice(2)], { stdio: "inherit" })
          .on("exit", (code) => resolve(code ?? 1))
          .on("error", (error) => {
            console.error(`could not start vitest: ${error.message}`);
            resolve(1);
          }),
      ),
  ),
);
process.exit(Math.max(...codes));
