import { describeBin } from "@durable-apps/shared/bin-checks";

describeBin("soak", new URL("../src/main.ts", import.meta.url), [
  "--store <url>",
  "--runs <n>",
  "--workers <n>",
  "--lease <ms>",
  "--seconds <n>",
  "--faults",
  "--cluster",
  "--freeze <s>",
]);
