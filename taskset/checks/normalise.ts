// Shared normalisation of responses and expected values: every check that compares words goes through here, so
// "Paris", "PARIS!" and "París" all match "paris", and "nineteen" matches "19".

const SMALL: Record<string, number> = {
  zero: 0,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  thirteen: 13,
  fourteen: 14,
  fifteen: 15,
  sixteen: 16,
  seventeen: 17,
  eighteen: 18,
  nineteen: 19,
};
const TENS: Record<string, number> = {
  twenty: 20,
  thirty: 30,
  forty: 40,
  fifty: 50,
  sixty: 60,
  seventy: 70,
  eighty: 80,
  ninety: 90,
};
const SCALES: Record<string, number> = { thousand: 1000, million: 1_000_000 };

const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u;

/**
 * Case-folded, NFKC, accents removed (Latin combining marks only, so kana are untouched), thousands separators
 * removed, punctuation turned into spaces, English number words turned into digits ("twenty-one" → "21").
 */
export function normalise(text: string): string {
  let out = text.normalize('NFKC').toLowerCase();
  out = out
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .normalize('NFC');
  out = out.replace(/(\d)[,\u2009\u202f](?=\d{3}(?!\d))/g, '$1');
  out = out.replace(/[^\p{L}\p{N}]+/gu, ' ').trim();
  return numberWordsToDigits(out.split(' ').filter((w) => w.length > 0)).join(' ');
}

/**
 * Replaces runs of English number words by their value: ["one", "hundred", "and", "five"] → ["105"]. A run follows
 * the grammar of written numbers, so "nineteen eighty-four" stays two numbers (19 84), as a reader would take it.
 */
export function numberWordsToDigits(words: string[]): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < words.length) {
    if (!(words[i]! in SMALL || words[i]! in TENS)) {
      out.push(words[i]!);
      i++;
      continue;
    }
    let total = 0;
    let current = 0;
    let last: 'start' | 'small' | 'tens' | 'hundred' | 'scale' = 'start';
    let j = i;
    for (; j < words.length; j++) {
      const w = words[j]!;
      const open = last === 'start' || last === 'hundred' || last === 'scale';
      if (w in SMALL && (open || (last === 'tens' && SMALL[w]! < 10))) {
        current += SMALL[w]!;
        last = 'small';
      } else if (w in TENS && open) {
        current += TENS[w]!;
        last = 'tens';
      } else if (w === 'hundred' && last === 'small') {
        current *= 100;
        last = 'hundred';
      } else if (w in SCALES && (last === 'small' || last === 'tens' || last === 'hundred')) {
        total += current * SCALES[w]!;
        current = 0;
        last = 'scale';
      } else if (
        w === 'and' &&
        (last === 'hundred' || last === 'scale') &&
        ((words[j + 1] ?? '') in SMALL || (words[j + 1] ?? '') in TENS)
      ) {
        continue;
      } else break;
    }
    out.push(String(total + current));
    i = j;
  }
  return out;
}

/**
 * Where `term` occurs in already-normalised text as whole words, or -1. A word boundary is the text's edge, a space,
 * or a CJK character (Japanese has no spaces: "答えは6です" contains "6"); CJK ends of a term need no boundary.
 */
export function findTerm(normalisedText: string, term: string): number {
  const needle = normalise(term);
  if (needle.length === 0) return -1;
  const boundary = (ch: string | undefined) => ch === undefined || !/[\p{L}\p{N}]/u.test(ch) || CJK.test(ch);
  const checkBefore = !CJK.test(needle.charAt(0));
  const checkAfter = !CJK.test(needle.charAt(needle.length - 1));
  for (let at = normalisedText.indexOf(needle); at >= 0; at = normalisedText.indexOf(needle, at + 1)) {
    if (
      (!checkBefore || boundary(normalisedText[at - 1])) &&
      (!checkAfter || boundary(normalisedText[at + needle.length]))
    )
      return at;
  }
  return -1;
}

export function containsTerm(normalisedText: string, term: string): boolean {
  return findTerm(normalisedText, term) >= 0;
}

/** The first of `terms` found, or undefined. */
export function firstTermFound(normalisedText: string, terms: readonly string[]): string | undefined {
  return terms.find((term) => containsTerm(normalisedText, term));
}

/** Words as a reader counts them: whitespace-separated pieces that hold a letter or a digit. */
export function countWords(text: string): number {
  return text
    .normalize('NFKC')
    .split(/\s+/)
    .filter((w) => /[\p{L}\p{N}]/u.test(w)).length;
}

/** Sentences of a response (split after . ! ? ; and at line breaks), each normalised. */
export function normalisedSentences(text: string): string[] {
  return text
    .split(/(?<=[.!?;。！？])\s+|\n+/)
    .map(normalise)
    .filter((s) => s.length > 0);
}

/** Numbers in reading order (digits or English number words), as numbers. */
export function numbersIn(text: string): number[] {
  const cleaned = text
    .normalize('NFKC')
    .replace(/\u2212/g, '-')
    .replace(/(\d)[,\u2009\u202f](?=\d{3}(?!\d))/g, '$1');
  const spaced = cleaned.toLowerCase().replace(/(\p{L})-(?=\p{L})/gu, '$1 '); // "twenty-one" → "twenty one"
  const words = spaced
    .replace(/[^\p{L}\p{N}.\-]+/gu, ' ')
    .split(' ')
    .filter((w) => w.length > 0);
  const joined = numberWordsToDigits(words.map((w) => w.replace(/[.]+$/, ''))).join(' ');
  return (joined.match(/(?<![\d.])-?\d+(?:\.\d+)?/g) ?? []).map(Number);
}
