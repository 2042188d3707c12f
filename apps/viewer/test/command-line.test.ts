import { describeBin } from "@durable-apps/shared/bin-checks";

describeBin("viewer", new URL("../src/main.ts", import.meta.url), [
  "--store <url>",
  "--events <path>",
  "--key <key>",
  "--key-file <path>",
  "--demo",
  "--port <n>",
  "--allow-actions",
  "--host <host>",
]);
