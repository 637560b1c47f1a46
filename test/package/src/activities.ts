/** The user's own activity: the work done under the lock, handed the lease's fencing token. */
export async function exportBatch(input: { key: string; token: string }): Promise<string> {
  return `exported ${input.key} under token ${input.token}`;
}
