/*
 * SIGTERM and SIGINT for the workers of this process (`stopOnSignals`): one
 * handler stops them all, then lets the signal do what it would have done.
 */

/** A worker as the handler sees it. */
interface Stoppable {
  stop(): Promise<void>;
}

const SIGNALS: readonly NodeJS.Signals[] = ["SIGTERM", "SIGINT"];

/** The workers of this process that stop on SIGTERM and SIGINT: one handler stops them all, then lets the signal act. */
const onSignals = new Set<Stoppable>();

export function stopsOnSignals(worker: Stoppable): void {
  if (onSignals.size === 0) for (const signal of SIGNALS) process.on(signal, stopAll);
  onSignals.add(worker);
}

export function noLongerOnSignals(worker: Stoppable): void {
  onSignals.delete(worker);
  if (onSignals.size === 0) for (const signal of SIGNALS) process.removeListener(signal, stopAll);
}

function stopAll(signal: NodeJS.Signals): void {
  for (const each of SIGNALS) process.removeListener(each, stopAll);
  void Promise.all([...onSignals].map((worker) => worker.stop())).then(() => {
    // Nothing else listens: the signal does what it would have done without the workers.
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  });
}
