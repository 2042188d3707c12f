/** A console that cannot start (a bad option, a store that does not answer): one line that says what to do; the bin exits 2. */
export class ConsoleError extends Error {
  override readonly name = "ConsoleError";
}

/** The first line of an error's message, for a one-line ConsoleError. */
export function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0]?.trim() || "no answer";
}
