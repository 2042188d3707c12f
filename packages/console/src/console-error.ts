/** A console that cannot start (a bad option, a store that does not answer): one line that says what to do; the bin exits 2. */
export class ConsoleError extends Error {
  override readonly name = "ConsoleError";
}
