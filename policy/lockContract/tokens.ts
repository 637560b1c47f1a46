/** Orders two fencing tokens as the lock service issued them (decimal strings of any width). */
export function compareTokens(a: string, b: string): number {
  const [x, y] = [BigInt(a), BigInt(b)];
  return x < y ? -1 : x > y ? 1 : 0;
}
