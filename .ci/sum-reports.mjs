// Sums every vitest JSON report (each package's .vitest/report*.json) into the closing line CI reads: "N passed, N failed".
// Exits non-zero on a failed test or when no test ran at all.
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";

let passed = 0;
let failed = 0;
let skipped = 0;
for (const group of ["packages", "apps"]) {
  if (!existsSync(group)) continue;
  for (const name of readdirSync(group)) {
    const reports = join(group, name, ".vitest");
    if (!existsSync(reports)) continue;
    // A package may write more than one report (vitest runs side by side): report-<project>.json each
    for (const file of readdirSync(reports).filter((f) => /^report.*\.json$/.test(f))) {
      const report = join(reports, file);
      const json = JSON.parse(readFileSync(report, "utf8"));
      passed += json.numPassedTests;
      failed += json.numFailedTests;
      skipped += json.numPendingTests + json.numTodoTests;
      console.log(`${report}: ${json.numPassedTests} passed, ${json.numFailedTests} failed`);
    }
  }
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
