import { describeBin } from "@durable-apps/shared/bin-checks";

describeBin("demo", new URL("../src/main.ts", import.meta.url), ["--store <url>", "--runs <n>", "--rerun-in-doubt"]);
