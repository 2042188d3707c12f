import { createInterface } from "node:readline/promises";

/** What worker 2 was told about the calls in doubt: run them again, or leave the run waiting, and why. */
export type Decision = { readonly rerun: true } | { readonly rerun: false; readonly why: string };

/**
 * Decides whether the calls in doubt may run again: `--rerun-in-doubt` says
 * yes; else a terminal asks whether the mail went out; with no terminal the
 * run stays in doubt.
 */
export async function decide(rerunInDoubt: boolean, say: (line: string) => void): Promise<Decision> {
  if (rerunInDoubt) {
    say("--rerun-in-doubt: we checked, no mail went out, so email_tickets may run again");
    return { rerun: true };
  }
  if (!process.stdin.isTTY)
    return {
      rerun: false,
      why: "no terminal to ask whether the mail went out; `pnpm demo --rerun-in-doubt` decides it may run again",
    };
  const prompt = createInterface({ input: process.stdin, output: process.stdout });
  let answer: string;
  try {
    answer = await prompt.question(
      "worker 2 | Did the tickets mail go out? Check the mail server. [y = it did / N = run it again] ",
    );
  } catch (error) {
    // Ctrl+C at the question rejects it: no answer is no decision, and the worker still stops in order.
    if ((error as { code?: unknown }).code !== "ABORT_ERR") throw error;
    process.stdout.write("\n");
    return { rerun: false, why: "no answer (Ctrl+C); `pnpm demo --rerun-in-doubt` decides it may run again" };
  } finally {
    prompt.close();
  }
  if (answer.trim().toLowerCase().startsWith("y"))
    return { rerun: false, why: "the mail went out, and running email_tickets again would mail the tickets twice" };
  return { rerun: true };
}
