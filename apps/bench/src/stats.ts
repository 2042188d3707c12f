/** Figures of a set of latencies, in milliseconds. */
export interface Latency {
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
}

export function latencyOf(samples: readonly number[]): Latency {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return { p50: at(0.5), p99: at(0.99), mean: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length) };
}

/** Times `fn` `times` times, one after another; the latencies in milliseconds. */
export async function timed(times: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    await fn(i);
    samples.push(performance.now() - start);
  }
  return samples;
}

export const round = (n: number, digits = 2): number => Number(n.toFixed(digits));
