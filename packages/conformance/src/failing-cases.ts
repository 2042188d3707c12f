import type { GroupName } from "./cases/case.js";
import { groupNamed } from "./groups.js";
import { Harness } from "./harness/harness.js";
import type { ConformanceInitializer } from "./harness/initializer.js";

/**
 * Runs a group's cases against a store outside any test runner and returns the
 * names of those that fail, each with its failure message (cases the store's
 * capabilities skip are left out). For checking that a deliberately broken
 * store is caught, or which promises a store in progress does not keep yet.
 */
export async function failingCases(init: ConformanceInitializer, group: GroupName): Promise<Map<string, string>> {
  const failed = new Map<string, string>();
  for (const testCase of groupNamed(group).cases) {
    if (testCase.skipUnless?.(init) !== undefined) continue;
    const h = await Harness.open(init);
    try {
      if ((groupNamed(group).skipFor?.(h.store) ?? testCase.skipFor?.(h)) !== undefined) continue;
      await testCase.run(h);
    } catch (error) {
      failed.set(testCase.name, error instanceof Error ? error.message : String(error));
    } finally {
      await h.dispose();
    }
  }
  return failed;
}
