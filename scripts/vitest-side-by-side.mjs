// Runs a package's vitest projects as vitest processes side by side: one vitest run takes its projects one after
// the other when their worker limits differ (a project whose files run one at a time beside one that need not).
// A package's "test" script names each project with --side="<project>"; every other argument goes to each
// process, and each writes its JSON report to .vitest/report-<project, as a slug>.json (.ci/run sums them).
// A forwarded --project picks among the sides; with a filter (a file, -t), a side it leaves empty passes.
import { spawn } from "node:child_process";
import { join } from "node:path";

const SIDE = "--side=";
// pnpm passes on the "--" of `pnpm test -- -t name`: vitest would take what follows as file filters.
const args = process.argv.slice(2).filter((arg) => arg !== "--");
const sides = args.filter((arg) => arg.startsWith(SIDE)).map((arg) => arg.slice(SIDE.length));
const rest = args.filter((arg) => !arg.startsWith(SIDE));
if (sides.length === 0) {
  console.error('vitest-side-by-side: name the projects to run, as --side="<project>"');
  process.exit(2);
}

// --project <name> or --project=<name>, taken out of what is forwarded.
const asked = [];
const forwarded = [];
for (let i = 0; i < rest.length; i++) {
  if (rest[i] === "--project") asked.push(rest[++i]);
  else if (rest[i].startsWith("--project=")) asked.push(rest[i].slice("--project=".length));
  else forwarded.push(rest[i]);
}
const projects = asked.length === 0 ? sides : sides.filter((side) => asked.includes(side));
if (projects.length === 0) {
  console.error(`vitest-side-by-side: no project ${asked.join(", ")}; the projects are ${sides.join(", ")}`);
  process.exit(2);
}

const vitest = join(process.cwd(), "node_modules", ".bin", "vitest");
const slug = (name) => name.toLowerCase().replace(/[^a-z0-9]+/g, "-");
const filtered = forwarded.length > 0 ? ["--passWithNoTests"] : [];
const codes = await Promise.all(
  projects.map(
    (project) =>
      new Promise((resolve) =>
        spawn(
          vitest,
          [
            "run",
            "--project",
            project,
            `--outputFile.json=.vitest/report-${slug(project)}.json`,
            ...filtered,
            ...forwarded,
          ],
          { stdio: "inherit" },
        )
          .on("exit", (code) => resolve(code ?? 1))
          .on("error", (error) => {
            console.error(`vitest-side-by-side: could not start vitest: ${error.message}`);
            resolve(1);
          }),
      ),
  ),
);
process.exit(Math.max(...codes));
