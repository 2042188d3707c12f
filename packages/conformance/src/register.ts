import { afterAll, beforeAll, describe, it } from "vitest";
import type { ConformanceGroup, GroupName } from "./cases/case.js";
import { GROUPS, groupNamed } from "./groups.js";
import { Harness } from "./harness/harness.js";
import { assertInitializer, type ConformanceInitializer } from "./harness/initializer.js";
import type { CheckpointStore } from "@durable/core";
import { checkOptions, type OptionTable } from "@durable/core/runner";

/** Options of `runConformance`. */
export interface ConformanceOptions {
  /** Only these groups; default every group. */
  readonly groups?: readonly GroupName[];
}

const CONFORMANCE_OPTIONS: OptionTable<ConformanceOptions> = { groups: true };

/**
 * Registers the kit's vitest suites for a store: one `describe` per group, one
 * test per promise. Call it at the top level of a test file. A group the store
 * lacks a capability for shows as skipped, with the reason.
 */
export function runConformance<S extends CheckpointStore>(
  initializer: ConformanceInitializer<S>,
  options: ConformanceOptions = {},
): void {
  const init = assertInitializer(initializer);
  checkOptions("runConformance", options, CONFORMANCE_OPTIONS);
  const groups = options.groups === undefined ? GROUPS : options.groups.map(groupNamed);
  describe(`conformance: ${init.name}`, () => {
    withHooks(init);
    for (const group of groups) registerGroup(init, group);
  });
}

/** Registers one group on its own, with the initializer's hooks around it. */
export function runConformanceGroup<S extends CheckpointStore>(
  name: GroupName,
  initializer: ConformanceInitializer<S>,
): void {
  const init = assertInitializer(initializer);
  describe(`conformance: ${init.name}`, () => {
    withHooks(init);
    registerGroup(init, groupNamed(name));
  });
}

function withHooks(init: ConformanceInitializer): void {
  if (init.beforeAll !== undefined) beforeAll(() => init.beforeAll?.(), 120_000);
  if (init.afterAll !== undefined) afterAll(() => init.afterAll?.(), 120_000);
}

function registerGroup(init: ConformanceInitializer, group: ConformanceGroup): void {
  describe(group.name, () => {
    const groupSkip = group.skipUnless?.(init);
    for (const testCase of group.cases) {
      const skip = groupSkip ?? testCase.skipUnless?.(init);
      it(
        testCase.name,
        async (context) => {
          if (skip !== undefined) context.skip(`skipped: ${skip}`);
          const h = await Harness.open(init);
          try {
            const storeSkip = group.skipFor?.(h.store) ?? testCase.skipFor?.(h);
            if (storeSkip !== undefined) context.skip(`skipped: ${storeSkip}`);
            await testCase.run(h);
          } finally {
            await h.dispose();
          }
        },
        testCase.timeout ?? 30_000,
      );
    }
  });
}
