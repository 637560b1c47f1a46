// What the benchmarks compute from their samples, in one place so every table means the same thing.

/** The p-th percentile of `samples` by nearest rank (p in (0, 100]): a sample that was measured. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) throw new Error('percentile of no samples');
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** The median, as the 50th percentile. */
export function median(samples: readonly number[]): number {
  return percentile(samples, 50);
}

/** How long one run of `op` took, in ms. */
export async function timeOnce(op: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await op();
  return performance.now() - start;
}

/** Runs `op` `warmup` times unmeasured (connections, caches, JIT), then `times` times; the durations in ms. */
export async function timeEach(op: () => Promise<unknown>, times: number, warmup: number): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await op();
  const samples: number[] = [];
  for (let i = 0; i < times; i++) samples.push(await timeOnce(op));
  return samples;
}
