// Language identification of short answers, by the measured rule of stack.md: strip quoted spans, URLs and
// numbers; no letters left → language-neutral; Japanese by kana; with ≥ 10 letters the language that eld ranks first
// among the candidates (the benchmark's languages plus English); under 10 letters, stop-word counts (the
// `stopword` package's lists), ties to the detector. Bare names ("Angela Merkel.") and single words ("Au.") are
// language-neutral: they cannot show which language a model answers in.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { deu, eng, fra, ita, jpn, nld, por, spa, swe } from 'stopword';
import type { LanguageCode } from '../types.ts';

type Detector = ReturnType<(typeof import('eld/medium'))['eld']['newInstance']>;
let detectorInstance: Detector | undefined;

/**
 * Our own detector instance (eld's global one has settings any other importer could change), made by the first check
 * that needs it: eld's model takes ~1 s and ~190 MB to load, which a process that checks no language (`pilot
 * enqueue`, a worker on other families) need not pay. The check is synchronous and eld is ESM-only, so the model is
 * loaded with require (Node ≥ 20.19 loads an ES module that way).
 */
function detector(): Detector {
  if (!detectorInstance) {
    const file = fileURLToPath(import.meta.resolve('eld/medium'));
    let module: typeof import('eld/medium');
    try {
      module = createRequire(import.meta.url)(file);
    } catch (error) {
      if ((error as { code?: string }).code !== 'ERR_REQUIRE_ESM') throw error;
      throw new Error(`the language check needs Node 20.19 or later (this is ${process.version})`, { cause: error });
    }
    detectorInstance = module.eld.newInstance();
  }
  return detectorInstance;
}

/** Every language the check can be asked about, English first. */
export const LANGUAGES: readonly LanguageCode[] = ['en', 'fr', 'de', 'es', 'it', 'pt', 'nl', 'sv', 'ja'];

export const LANGUAGE_NAMES: Record<LanguageCode, string> = {
  en: 'English',
  fr: 'French',
  de: 'German',
  es: 'Spanish',
  it: 'Italian',
  pt: 'Portuguese',
  nl: 'Dutch',
  sv: 'Swedish',
  ja: 'Japanese',
};

const STOPWORDS: Record<LanguageCode, ReadonlySet<string>> = {
  en: new Set(eng),
  fr: new Set(fra),
  de: new Set(deu),
  es: new Set(spa),
  it: new Set(ita),
  pt: new Set(por),
  nl: new Set(nld),
  sv: new Set(swe),
  ja: new Set(jpn),
};

/** Detector confidence needs this many letters; below it, stop words decide (stack.md). */
export const MIN_DETECTOR_LETTERS = 10;

/** Lower-case words that may sit inside a bare name ("Leonardo da Vinci", "Vincent van Gogh"). */
const NAME_PARTICLES = new Set(['da', 'de', 'del', 'der', 'di', 'du', 'la', 'le', 'van', 'von', 'y', 'bin', 'al']);

export type LanguageIdentification = {
  /** The identified language, 'other' for a script outside the candidates, or null when language-neutral. */
  language: LanguageCode | 'other' | null;
  method: 'script' | 'detector' | 'stopwords' | 'neutral';
  detail: string;
};

/** The text the rule looks at: quoted spans, URLs and numbers removed (names and copies are not evidence). */
export function strippedForLanguage(text: string): string {
  return text
    .normalize('NFKC')
    .replace(/"[^"]*"|“[^”]*”|„[^“”]*[“”]|«[^»]*»|‘[^’]*’|「[^」]*」|『[^』]*』|`[^`]*`/g, ' ')
    .replace(/https?:\/\/\S+|www\.\S+/g, ' ')
    .replace(/\p{N}+(?:[.,]\p{N}+)*/gu, ' ');
}

export function identifyLanguage(text: string, among: readonly LanguageCode[]): LanguageIdentification {
  const candidates = [...new Set<LanguageCode>(['en', ...among])];
  const stripped = strippedForLanguage(text);
  const letters = (stripped.match(/\p{L}/gu) ?? []).length;
  if (letters === 0)
    return { language: null, method: 'neutral', detail: 'no letters outside quotes and numbers: not checked' };

  const kana = (stripped.match(/[\p{Script=Hiragana}\p{Script=Katakana}]/gu) ?? []).length;
  const han = (stripped.match(/\p{Script=Han}/gu) ?? []).length;
  if (kana > 0 && kana + han >= letters / 2) {
    return {
      language: candidates.includes('ja') ? 'ja' : 'other',
      method: 'script',
      detail: `Japanese script (${kana} kana, ${han} han of ${letters} letters)`,
    };
  }
  if (han >= letters / 2)
    return { language: 'other', method: 'script', detail: `Chinese script (${han} han of ${letters} letters)` };

  const words = stripped.match(/\p{L}+/gu) ?? []; // apostrophes split words: "C'est" → "C", "est"
  // One word is no evidence of a response language ("Au." is a symbol, not French); up to four capitalised
  // non-stop-words are a name ("Angela Merkel.").
  if (words.length === 1)
    return { language: null, method: 'neutral', detail: `a single word "${words[0]}": language-neutral` };
  if (isBareName(words, candidates))
    return { language: null, method: 'neutral', detail: `bare name "${words.join(' ')}": language-neutral` };

  const ranked = detectorRanking(stripped, candidates);
  if (letters >= MIN_DETECTOR_LETTERS) {
    const [top] = ranked;
    return { language: top?.[0] ?? 'other', method: 'detector', detail: `detector: ${formatRanking(ranked)}` };
  }
  const counts = candidates.map(
    (lang) => [lang, words.filter((w) => STOPWORDS[lang].has(w.toLowerCase())).length] as const,
  );
  const best = Math.max(...counts.map(([, n]) => n));
  const tied = new Set(counts.filter(([, n]) => n === best).map(([lang]) => lang));
  const winner = ranked.find(([lang]) => tied.has(lang))?.[0] ?? (tied.size === 1 ? [...tied][0]! : 'other');
  const countText =
    counts
      .filter(([, n]) => n > 0)
      .map(([l, n]) => `${l} ${n}`)
      .join(', ') || 'none';
  return {
    language: winner,
    method: 'stopwords',
    detail: `${letters} letters; stop words: ${countText}; detector: ${formatRanking(ranked)}`,
  };
}

/** Candidates eld scores, best first; ties keep the candidates' order so the result never depends on Map order. */
function detectorRanking(text: string, candidates: readonly LanguageCode[]): [LanguageCode, number][] {
  const scores = detector().detect(text).getScores();
  return candidates
    .filter((lang) => (scores[lang] ?? 0) > 0)
    .map((lang) => [lang, scores[lang]!] as [LanguageCode, number])
    .sort((a, b) => b[1] - a[1] || candidates.indexOf(a[0]) - candidates.indexOf(b[0]));
}

function formatRanking(ranked: [LanguageCode, number][]): string {
  return ranked.length === 0
    ? 'no score'
    : ranked
        .slice(0, 3)
        .map(([lang, score]) => `${lang} ${score.toFixed(2)}`)
        .join(', ');
}

/** Up to four capitalised words (name particles allowed), none of them a stop word of a candidate language. */
function isBareName(words: string[], candidates: readonly LanguageCode[]): boolean {
  if (words.length === 0 || words.length > 4) return false;
  return words.every((w) => {
    if (NAME_PARTICLES.has(w)) return true;
    if (!/^\p{Lu}/u.test(w)) return false;
    return !candidates.some((lang) => STOPWORDS[lang].has(w.toLowerCase()));
  });
}
