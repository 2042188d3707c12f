import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

it("shows a finished call replayed and a call in doubt held until it is allowed to rerun", () => {
  const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
  const output = execFileSync(process.execPath, ["--import", "tsx", main], { encoding: "utf8" });
  expect(output).toContain("in doubt: email_tickets (started with no result)");
  expect(output).toContain("replayed: charge_card; reran: email_tickets");
  expect(output).toContain("charge_card ran 1 time(s); email_tickets ran 2 time(s)");
});
