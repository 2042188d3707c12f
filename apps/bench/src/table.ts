/** One column of a figures table: its heading, and each row's cell as text. */
export type Column<F> = readonly [heading: string, cell: (figures: F) => string];

/**
 * Figures as a plain-text table: the first column (the store) left-aligned
 * in 24 characters, every other one right-aligned under its heading, as wide
 * as its heading or its widest cell.
 */
export function textTable<F>(
  rows: readonly F[],
  store: (figures: F) => string,
  columns: readonly Column<F>[],
): string[] {
  const cells = rows.map((row) => columns.map(([, cell]) => cell(row)));
  const widths = columns.map(([heading], i) => Math.max(heading.length, ...cells.map((row) => row[i]?.length ?? 0)));
  const line = (first: string, rest: readonly string[]) =>
    [first.padEnd(24), ...rest.map((text, i) => text.padStart(widths[i] ?? 0))].join("  ");
  return [
    line(
      "store",
      columns.map(([heading]) => heading),
    ),
    ...rows.map((row, r) => line(store(row), cells[r] ?? [])),
  ];
}

/** A figure that may be missing (a store that does not count it): `-` then. */
export const orDash = (value: number | undefined, digits?: number): string =>
  value === undefined ? "-" : digits === undefined ? String(value) : value.toFixed(digits);
