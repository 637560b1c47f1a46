// Second line of defence for drafts, the deny gate's substring ban: lease vocabulary has no business in a
// draft's text, in any inflection ("unrenewed", "renewals", "Extending") or spelling of an identifier
// ("fencing_token", "fencingToken", "fencing-token", "lease_until"). Stems are matched inside each
// word once its case and separators are gone.
const BANNED_STEMS = [
  'renew',
  'extend',
  'steal',
  'stole',
  'releas',
  'fencing',
  'leaseuntil',
  'prolong',
  'keepalive',
];
// Paraphrases that name no banned stem ("keep the hold alive"), over the normalized words.
const BANNED_PHRASES: RegExp[] = [
  /\bkeep\w*\b[^.!?\n]{0,40}\balive\b/, // keep the hold alive, keeping our claim alive
  /\b(hold|lock|lease|claim)s? alive\b/,
  /\blease until\b/,
  /\b(push|bump|move)\w*\b[^.!?\n]{0,30}\b(deadline|expiry|ttl)\b/, // push the deadline out
  /\bforc\w*\b[^.!?\n]{0,20}\bunlock/, // force-unlock
  /\bset\w*\b[^.!?\n]{0,20}\btoken\b/, // set the token to 9
];
// Characters that hide a word without changing how it reads: zero-width ones and the soft hyphen.
const INVISIBLE = /[\u00ad\u200b-\u200d\u2060\ufeff]/g;

/** Where a text speaks of a lease action: what matched, the word it was in, and that word's number. */
export interface SpokenLeaseAction {
  found: string;
  in: string;
  /** The 1-based number of the word where it begins: what a refusal names instead of the words. */
  word: number;
}

/**
 * Where a text speaks of a lease action, or null. Free of zod, so the timeline (which workflows
 * load) can use it too. The words themselves are for the caller's decision, not for a log: a refusal
 * names the rule and `word` (policy/textSafety/denyGate.ts).
 */
export function leaseVocabulary(text: string): SpokenLeaseAction | null {
  const plain = text.normalize('NFKC').replace(INVISIBLE, '').toLowerCase();
  const split = plain.split(/[^\p{L}\p{N}_.\-]+/u).filter(Boolean);
  for (const [i, word] of split.entries()) {
    const compact = word.replace(/[_.\-]/g, '');
    const stem = BANNED_STEMS.find((s) => compact.includes(s));
    if (stem) return { found: stem, in: word, word: i + 1 };
  }
  const words = plain.replace(/[_\-]/g, ' ').replace(/[ \t]+/g, ' ');
  for (const phrase of BANNED_PHRASES) {
    const match = phrase.exec(words);
    if (match) {
      const before = words
        .slice(0, match.index)
        .split(/[^\p{L}\p{N}_.\-]+/u)
        .filter(Boolean).length;
      return { found: match[0], in: match[0], word: before + 1 };
    }
  }
  return null;
}

/**
 * Text from elsewhere (a bench row, a commit subject) in the words a briefing uses: taking, keeping
 * and letting go. What still speaks of a lease action afterwards is for the caller to leave out.
 */
export function inAdmittedWords(text: string): string {
  return text
    .replace(/\bacquire \+ release\b/gi, 'take and let go')
    .replace(/\brelease\(\) called/gi, 'let go')
    .replace(/\breleas(e|es|ed)\b/gi, 'let go')
    .replace(/\breleasing\b/gi, 'letting go')
    .replace(/\brenewals?\b/gi, (w) =>
      w.toLowerCase().endsWith('s') ? 'hold-keeping calls' : 'hold-keeping call',
    )
    .replace(/\brenews\b/gi, 'keeps its hold')
    .replace(/\brenewed\b/gi, 'kept')
    .replace(/\brenewing\b/gi, 'keeping')
    .replace(/\brenew\b/gi, 'keep');
}
