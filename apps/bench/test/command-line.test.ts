import { describeBin } from "@durable-apps/shared/bin-checks";

describeBin("bench", new URL("../src/main.ts", import.meta.url), [
  "--budget-ms <ms>",
  "--out <dir>",
  "--stores <names>",
  "--scale",
  "--console",
  "--long",
  "--steps <n>",
  "--sleepers",
  "--asleep <n>",
  "--due <n>",
  "--quick",
]);
