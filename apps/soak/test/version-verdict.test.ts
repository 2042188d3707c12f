import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readLedger } from "../src/ledger.js";
import type { Life } from "../src/slot.js";
import { vacuousDeploy, versionVerdict } from "../src/version-verdict.js";

// The versions soak's verdict reads who ran, claimed and wrote what from the ledger, against the version each
// process was started with: these check it finds what it must. Four runs: soak-0 and soak-1 on version 1, soak-2
// and soak-3 on version 2; worker 0.1 serves version 1, worker 1.2 version 2 (took runs at 150).

const dir = mkdtempSync(join(tmpdir(), "soak-versions-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

const lives: Life[] = [
  { worker: "0.1", version: 1, startedAt: 0, readyAt: 10 },
  { worker: "1.2", version: 2, startedAt: 100, readyAt: 150 },
];

/** The tools of a run of `version` by `worker`, the last ending at `end`. */
function run(
  k: number,
  worker: string,
  version: number,
  end: number,
  tools = ["hold_seats", "charge_card", "email_tickets"],
) {
  return tools.flatMap((tool, i) => [
    `S ${worker}.${k}.${i} ${worker} ${end - 10} soak-${k} c${i} ${tool} key ${version}`,
    `E ${worker}.${k}.${i} ${worker} ${end}`,
  ]);
}
const V2_TOOLS = ["hold_seats", "charge_card", "email_tickets", "send_receipt"];

function verdict(...lines: string[]) {
  const path = join(dir, `ledger-${++files}`);
  writeFileSync(path, `${lines.join("\n")}\n`);
  const otherVersion = new Map([
    [1, 3],
    [2, 1],
  ] as const);
  return versionVerdict({ ledger: readLedger(path), lives, runs: 4, deployed: 2, toDeploy: 2, otherVersion });
}

describe("the versions soak's verdict", () => {
  it("passes runs that went on only in processes of their version, and counts runs of version 1 that ended after the first worker of version 2 took runs", () => {
    const { figures, violations } = verdict(
      "C 0.1 5 soak-0",
      "K 0.1 5 6 soak-0 save accepted",
      ...run(0, "0.1", 1, 100),
      ...run(1, "0.1", 1, 200),
      "C 1.2 160 soak-2",
      ...run(2, "1.2", 2, 300, V2_TOOLS),
      ...run(3, "1.2", 2, 400, V2_TOOLS),
    );
    expect(violations).toEqual([]);
    expect(figures).toEqual({ deployed: 2, toDeploy: 2, v1AfterDeploy: 1, leftByV1: 3, leftByV2: 1 });
    expect(vacuousDeploy(figures)).toBeUndefined();
  });

  it("finds a tool, a claim or a save of a run by a process of the other version, a version-2 run without its receipt, and a process that wrote another version than it serves", () => {
    const { violations } = verdict(
      ...run(0, "1.2", 2, 100),
      "C 1.2 160 soak-1",
      ...run(1, "0.1", 1, 200),
      "K 0.1 170 171 soak-2 save refused",
      ...run(2, "1.2", 2, 300, V2_TOOLS),
      ...run(3, "1.2", 2, 400),
      "S x 0.1 500 soak-0 c9 send_receipt key 2",
    );
    expect(violations).toEqual([
      ...["hold_seats", "charge_card", "email_tickets"].map((tool) =>
        expect.stringContaining(`soak-0 (version 1): ${tool} ran by worker 1.2, a process of version 2`),
      ),
      "soak-0 (version 1): send_receipt ran by worker 0.1, a process of version 2",
      "worker 0.1 wrote version 2 with its send_receipt, but was started serving 1",
      "soak-1 (version 1): claimed by worker 1.2, a process of version 2",
      "soak-2 (version 2): a save sent by worker 0.1, a process of version 1",
      "soak-0 (version 1): a receipt was sent",
      "soak-3 (version 2): its receipt node never ran",
    ]);
  });

  it.for([
    [{ deployed: 1 }, /moved 1 of 2 workers/],
    [{ v1AfterDeploy: 0 }, /no run of version 1 finished after/],
    [{ leftByV1: 0 }, /no worker of version 1 met a run of version 2/],
    [{ leftByV2: 0 }, /no worker of version 2 met a run of version 1/],
  ] as const)("a deploy %o proved nothing, said in one line", ([changed, reason]) => {
    const figures = { deployed: 2, toDeploy: 2, v1AfterDeploy: 5, leftByV1: 3, leftByV2: 2, ...changed };
    expect(vacuousDeploy(figures)).toMatch(reason);
    expect(vacuousDeploy(figures)).not.toContain("\n");
  });
});
