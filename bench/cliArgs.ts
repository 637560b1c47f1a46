// Command-line argument parsers the benchmarks share.
import { InvalidArgumentError } from 'commander';

/** A commander parser for a whole number ≥ `min`; the error names the value it refused. */
export const wholeNumber =
  (min = 1) =>
  (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || n < min)
      throw new InvalidArgumentError(`not a whole number ≥ ${min}: ${value}`);
    return n;
  };

/** A commander parser for a comma-separated list of whole numbers ≥ `min`. */
export const wholeNumbers =
  (min = 1) =>
  (value: string): number[] =>
    value.split(',').map(wholeNumber(min));
