// Debian's headless Chromium, driven with playwright-core: what the console's and the chat page's browser tests use.
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll } from "vitest";

const CHROMIUM = "/usr/bin/chromium";

function chromiumPresent(): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (process.env["CI"] === "true")
    throw new Error(`No Chromium at ${CHROMIUM}; CI needs it (apt-get install chromium).`);
  console.warn(
    `Skipping this file's browser tests: no Chromium at ${CHROMIUM}. Install it with: apt-get install chromium`,
  );
  return false;
}

/**
 * Launches Debian's headless Chromium before a test file's tests and closes it
 * after: call it at the top level. Its `browser` is undefined (the tests skip)
 * where there is no Chromium, but on CI, which needs it.
 */
export function headlessChromium(): { readonly browser: Browser | undefined } {
  const launched: { browser: Browser | undefined } = { browser: undefined };
  beforeAll(async () => {
    if (!chromiumPresent()) return;
    launched.browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
    });
  }, 60_000);
  afterAll(async () => {
    await launched.browser?.close();
  });
  return launched;
}
