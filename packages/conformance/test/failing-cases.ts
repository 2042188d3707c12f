import { Harness, groupNamed, type ConformanceInitializer, type GroupName } from "../src/index.js";

/** The names of the cases of a group that fail against a store, each with its failure message. */
export async function failingCases(init: ConformanceInitializer, group: GroupName): Promise<Map<string, string>> {
  const failed = new Map<string, string>();
  for (const testCase of groupNamed(group).cases) {
    if (testCase.skipUnless?.(init) !== undefined) continue;
    const h = await Harness.open(init);
    try {
      await testCase.run(h);
    } catch (error) {
      failed.set(testCase.name, error instanceof Error ? error.message : String(error));
    } finally {
      await h.dispose();
    }
  }
  return failed;
}
