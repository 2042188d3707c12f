/**
 * pnpm soak [--store redis://… | postgresql://…]… [--runs N] [--workers N] [--seconds N]
 * Worker processes take the runs while a killer SIGKILLs one at random every
 * 0.5–2 s and restarts it; then every run must be done, none lost, and no
 * non-idempotent call run twice unless recovery reported it in doubt.
 * Default: 2,000 runs on Redis (REDIS_URL) and on PostgreSQL (DATABASE_URL).
 */
import { parseArgs } from "node:util";
import { SOAK_DEFAULTS, soak } from "./soak.js";

const { values } = parseArgs({
  // pnpm passes its "--" through.
  args: process.argv.slice(2).filter((arg) => arg !== "--"),
  options: {
    store: { type: "string", multiple: true },
    runs: { type: "string", default: String(SOAK_DEFAULTS.runs) },
    workers: { type: "string", default: String(SOAK_DEFAULTS.workers) },
    // Long soaks (--runs 2000 on PostgreSQL takes about 2 minutes here) get room; CI uses the default size and deadline.
    seconds: { type: "string", default: "900" },
  },
});
const stores = values.store ?? [
  process.env["REDIS_URL"] ?? "redis://127.0.0.1:6379",
  process.env["DATABASE_URL"] ?? "postgresql://postgres@127.0.0.1:5432/test",
];
const number = (name: string, text: string) => {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name} takes a whole number ≥ 1, not ${JSON.stringify(text)}.`);
  return n;
};

let failed = false;
for (const store of stores) {
  console.log(`soak on ${store}: ${values.runs} runs, ${values.workers} workers, a kill every 0.5–2 s`);
  const report = await soak({
    ...SOAK_DEFAULTS,
    store,
    runs: number("runs", values.runs),
    workers: number("workers", values.workers),
    deadlineSeconds: number("seconds", values.seconds),
    log: (line) => console.log(`  ${line}`),
  });
  console.log(
    `  ${report.runs} runs done in ${report.seconds.toFixed(1)} s through ${report.kills} kills; ` +
      `${report.inDoubtRuns} runs had calls in doubt, ${report.rerunCalls} non-idempotent calls reran after being reported; ` +
      `${report.violations.length} violations`,
  );
  for (const violation of report.violations.slice(0, 20)) console.log(`  VIOLATION ${violation}`);
  failed ||= report.violations.length > 0;
}
process.exitCode = failed ? 1 : 0;
