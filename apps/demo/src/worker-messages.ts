/**
 * What the demo and worker 2 tell each other over the IPC channel. Neither
 * message lets worker 2 claim anything sooner: it takes a run over only once
 * the store says its lease ran out.
 */

/** Worker 2 → the demo: it serves the flow now, so worker 1 may start. */
export const SECOND_SERVES = "worker 2 serves the flow";

/** The demo → worker 2: worker 1 exited, so once no run is left to drive, the demo is over. */
export const FIRST_EXITED = "worker 1 exited";

/** The first message `source` sends that is `message`. */
export function nextMessage(
  source: { on(event: "message", listener: (message: unknown) => void): unknown } & {
    off(event: "message", listener: (message: unknown) => void): unknown;
  },
  message: string,
): Promise<void> {
  return new Promise((resolve) => {
    const listener = (received: unknown) => {
      if (received !== message) return;
      source.off("message", listener);
      resolve();
    };
    source.on("message", listener);
  });
}
