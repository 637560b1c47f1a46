// What the patch under review is, in admitted words.
import { inAdmittedWords, leaseVocabulary } from '../textSafety/leaseVocabulary';

/**
 * What the patch is, from `--patch`: a commit range read with git (its commits' subjects and the
 * size of its diff) or a file a person wrote (its first lines).
 */
export interface PatchDescription {
  /** The range (`a1b2c3..d4e5f6`) or the file's name. */
  ref: string;
  /** Commit subjects, newest last, or the file's lines; at most five. */
  lines: string[];
  /** `git diff --shortstat` of the range, or null for a file. */
  stat: string | null;
}

/** The patch in one or two sentences, for the briefing. */
export function patchSentence(patch: PatchDescription | null | undefined): string {
  if (!patch) return 'No patch was named (--patch): the evidence below is for the build now running.';
  // In the briefing's words; a line that still speaks of a lease action is left out.
  const lines = patch.lines.map(inAdmittedWords).filter((l) => !leaseVocabulary(l));
  const what = lines.map((l) => `"${l.replace(/\.$/, '')}"`).join('; ') || 'its commits are not quoted';
  return patch.stat
    ? `The patch is ${patch.ref} (${patch.stat.trim()}): ${what}.`
    : `The patch (${patch.ref}): ${what}.`;
}
