import { defineConfig } from "vitest/config";
import { sharedTestConfig } from "../../vitest.shared.ts";

// The AI SDK adapter's tests run once per major of `ai` the peer range names:
// "ai 7" runs every test with `ai` itself; "ai 6" runs the adapter's tests (test/ai-sdk*.test.ts) with
// `ai` resolved to the `ai-v6` alias.
const shared = sharedTestConfig();
const { include, testTimeout } = shared.test!;

export default defineConfig({
  ...shared,
  test: {
    ...shared.test,
    projects: [
      { test: { name: "ai 7", include, testTimeout, env: { AI_SDK_MAJOR: "7" } } },
      {
        test: { name: "ai 6", include: ["test/ai-sdk*.test.ts"], testTimeout, env: { AI_SDK_MAJOR: "6" } },
        resolve: { alias: [{ find: /^ai(\/.*)?$/, replacement: "ai-v6$1" }] },
      },
    ],
  },
});
