/** Rows as text columns two spaces apart: the first column left-aligned, the others right-aligned (they hold numbers). */
export function alignColumns(rows: ReadonlyArray<ReadonlyArray<string | number>>): string[] {
  const cells = rows.map((row) => row.map(String));
  const widths: number[] = [];
  for (const row of cells) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  }
  return cells.map((row) =>
    row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join("  "),
  );
}
