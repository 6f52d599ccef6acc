// The language rule of stack.md on a table of hand-written answers: every language of the benchmark, short and long,
// with names, numbers and quoted spans; English answers that contain foreign names; language-neutral answers.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { identifyLanguage, LANGUAGES, passes, runCheck } from '../../../taskset/checks/index.ts';
import { readData } from '../../../taskset/data.ts';
import type { Check, LanguageCode } from '../../../taskset/types.ts';
import { REPO_ROOT } from '../../fixtures.ts';

const TABLE: [string, LanguageCode][] = [
  ['The capital of Canada is Ottawa.', 'en'],
  ['It was written by Gabriel García Márquez.', 'en'],
  ['Yes, that is right.', 'en'],
  ['Mozart composed it in 1791.', 'en'],
  ['The word "Schadenfreude" means joy at the misfortune of others.', 'en'],
  ['La capitale du Canada est Ottawa.', 'fr'],
  ["Oui, c'est exact.", 'fr'],
  ["C'est Einstein.", 'fr'],
  ['Il a été écrit par Victor Hugo.', 'fr'],
  ['Je ne sais pas.', 'fr'],
  ['Die Hauptstadt von Kanada ist Ottawa.', 'de'],
  ['Ja, das stimmt.', 'de'],
  ['Eine Spinne hat acht Beine.', 'de'],
  ['Ich weiß es nicht.', 'de'],
  ['La capital de Canadá es Ottawa.', 'es'],
  ['Sí, es correcto.', 'es'],
  ['Fue escrito por Cervantes.', 'es'],
  ['No lo sé.', 'es'],
  ['La capitale del Canada è Ottawa.', 'it'],
  ['Sì, è giusto.', 'it'],
  ['È stato scritto da Dante.', 'it'],
  ['Non lo so.', 'it'],
  ['A capital do Canadá é Ottawa.', 'pt'],
  ['Sim, está correto.', 'pt'],
  ['Uma aranha tem oito patas.', 'pt'],
  ['Não sei.', 'pt'],
  ['De hoofdstad van Canada is Ottawa.', 'nl'],
  ['Ja, dat klopt.', 'nl'],
  ['Het is geschreven door Tolkien.', 'nl'],
  ['Ik weet het niet.', 'nl'],
  ['Huvudstaden i Kanada är Ottawa.', 'sv'],
  ['Ja, det stämmer.', 'sv'],
  ['Den skrevs av Astrid Lindgren.', 'sv'],
  ['Jag vet inte.', 'sv'],
  ['カナダの首都はオタワです。', 'ja'],
  ['はい、そうです。', 'ja'],
  ['答えは8です。', 'ja'],
];

const NEUTRAL = [
  'Angela Merkel.',
  'Ottawa',
  '42',
  '"Bonjour tout le monde"',
  'Leonardo da Vinci',
  'https://example.com/page',
  'Au.',
  'Oui.',
];

describe('identifyLanguage', () => {
  it.each(TABLE)('%s → %s', (text, lang) => {
    expect(identifyLanguage(text, LANGUAGES).language).toBe(lang);
  });

  it.each(NEUTRAL)('%s is language-neutral', (text) => {
    expect(identifyLanguage(text, LANGUAGES).language).toBeNull();
  });

  it('is deterministic (same answer, same detail)', () => {
    for (const [text] of TABLE.slice(0, 8))
      expect(identifyLanguage(text, LANGUAGES)).toEqual(identifyLanguage(text, LANGUAGES));
  });

  it('ignores quoted spans and numbers as evidence', () => {
    expect(identifyLanguage('He said "Je ne regrette rien" in 1960, and the crowd cheered.', LANGUAGES).language).toBe(
      'en',
    );
  });

  it('ranks only among the candidates plus English', () => {
    // Spanish text asked about Portuguese: with Spanish among the candidates it is Spanish, never Portuguese.
    expect(identifyLanguage('La respuesta correcta es Ottawa.', ['es', 'pt']).language).toBe('es');
    expect(identifyLanguage('カナダの首都はオタワです。', ['fr']).language).toBe('other');
  });
});

describe('the language check', () => {
  const french: Check = { type: 'language', lang: 'fr', among: [...LANGUAGES] };

  it('passes the right language and fails the wrong one, a neutral answer, or a near language', () => {
    expect(passes(runCheck(french, 'Bien sûr ! La bonne réponse est Ottawa.'))).toBe(true);
    expect(passes(runCheck(french, 'The correct answer is Ottawa.'))).toBe(false);
    expect(passes(runCheck(french, 'Ottawa.'))).toBe(false);
    expect(passes(runCheck(french, 'La respuesta correcta es Ottawa.'))).toBe(false);
    expect(runCheck(french, 'Ottawa.').detail).toMatch(/language-neutral/);
  });

  it('accepts the answer frames of every target language of default_response_language', () => {
    const data = readData<{ languages: LanguageCode[]; answerFrames: Record<LanguageCode, string> }>(
      'families/default_response_language.json',
    );
    for (const lang of data.languages) {
      for (const answer of ['Ottawa', '8', 'Einstein', 'Au']) {
        const text = data.answerFrames[lang].replace('{answer}', answer);
        expect(identifyLanguage(text, LANGUAGES).language, text).toBe(lang);
      }
    }
  });
});

describe("eld's model", () => {
  it('is loaded by the first check that needs it, not by importing the checks (a process that checks no language never pays for it)', async () => {
    // A fresh process (this one's modules are shared with other files), its heap measured after a full collection:
    // the model is some 60 MB of it.
    const script = `
      const heapMiB = () => (globalThis.gc(), process.memoryUsage().heapUsed / 2 ** 20);
      const start = heapMiB();
      const checks = await import('./taskset/checks/index.ts');
      const imported = heapMiB();
      const language = checks.identifyLanguage('Bien sûr ! La bonne réponse est Ottawa.', ['fr']).language;
      console.log(JSON.stringify({ language, byImport: imported - start, byCheck: heapMiB() - imported }));`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script],
      { cwd: REPO_ROOT },
    );
    const heap = JSON.parse(stdout);
    expect(heap.language).toBe('fr');
    expect(heap.byImport).toBeLessThan(20);
    expect(heap.byCheck).toBeGreaterThan(40);
  });
});
