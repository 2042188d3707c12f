import { describe, expect, it } from "vitest";
import { alignColumns } from "../src/table.js";

describe("alignColumns", () => {
  it("pads each column to its widest cell: the first to the right, numbers to the left", () => {
    expect(
      alignColumns([
        ["store", "runs/s"],
        ["memory", 1200],
        ["sqlite", 85.5],
      ]),
    ).toEqual(["store   runs/s", "memory    1200", "sqlite    85.5"]);
  });
});
