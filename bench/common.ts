import type { BenchDatabase } from './database.js';

/** One figure a benchmark reports. */
export interface Figure {
  name: string;
  value: number;
  unit: string;
  /** e.g. ">= 0.7" or "<= 100"; checked against value when present. */
  target?: string;
}

export interface BenchResult {
  figures: Figure[];
  /** Free-form details kept in the JSON (per-round numbers, settings). */
  details?: Record<string, unknown>;
}

export interface Benchmark {
  name: string;
  description: string;
  /** Long-running: only when asked for by name (or `all`), not in a plain `npm run bench`. */
  optIn?: boolean;
  run(db: BenchDatabase): Promise<BenchResult>;
}

export function targetMet(figure: Figure): boolean | undefined {
  const match = figure.target?.match(/^(>=|<=)\s*([0-9.e+]+)$/);
  if (!match) return undefined;
  const bound = Number(match[2]);
  return match[1] === '>=' ? figure.value >= bound : figure.value <= bound;
}

/** Nearest-rank percentile of an unsorted array (p in 0..100). */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function median(values: number[]): number {
  return percentile(values, 50);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function round(value: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
