/**
 * Whether a server the tests need answers `probe`. In CI a missing server fails
 * the run loudly; locally its tests are skipped with a message saying how to start it.
 */
export async function serverAnswers(
  name: string,
  url: string,
  probe: () => Promise<void>,
  start: string,
): Promise<boolean> {
  try {
    await probe();
    return true;
  } catch (error) {
    if (process.env["CI"] === "true")
      throw new Error(`${name} does not answer at ${url} (${String(error)}); CI needs it.`);
    console.warn(`Skipping the ${name} tests: nothing answers at ${url}. Start it with: ${start}`);
    return false;
  }
}
