// Typed access to data/families/world.json: stable world knowledge shared by several families.
import { readData } from '../data.ts';

export type Country = {
  name: string;
  capital: string;
  capitalAliases: string[];
  continent: string | null;
  currency: string | null;
  currencyAliases: string[];
  language: string | null;
  languageAliases: string[];
  capitalDistractor: string;
};
export type Book = { title: string; author: string; aliases: string[]; distractor: string };
export type Painting = { title: string; painter: string; aliases: string[]; distractor: string };
export type Invention = { invention: string; inventor: string; aliases: string[]; distractor: string };
export type Element = { name: string; symbol: string; number: number; distractor: string };

export type World = {
  version: string;
  /** Number words 0–12 in each of the benchmark's languages, so a count answered in words still counts. */
  numberWords: Record<string, string[]>;
  countries: Country[];
  books: Book[];
  paintings: Painting[];
  inventions: Invention[];
  elements: Element[];
};

export const world = (): World => readData<World>('families/world.json');

/** A number's digits plus, up to twelve, its word in each of the benchmark's languages: "8", "eight", "huit", … */
export function numberForms(value: number): string[] {
  const words = Object.values(world().numberWords)
    .map((list) => list[value])
    .filter((w): w is string => w !== undefined);
  return [String(value), ...new Set(words)];
}

/** "the Netherlands" → "The Netherlands" at the start of a sentence. */
export const sentenceStart = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

/** One question-and-answer association of a table: "capital of Peru is Lima", with accepted forms and a wrong one. */
export type Fact = { subject: string; answer: string; aliases: string[]; distractor: string | null };

export type Relation = 'capital' | 'currency' | 'language' | 'symbol' | 'author' | 'painter' | 'inventor';

/** Every fact of a relation that has an answer (null fields are left out). */
export function facts(relation: Relation): Fact[] {
  const w = world();
  const withAnswer = (rows: (Fact | null)[]) => rows.filter((f): f is Fact => f !== null);
  switch (relation) {
    case 'capital':
      return w.countries.map((c) => ({
        subject: c.name,
        answer: c.capital,
        aliases: c.capitalAliases,
        distractor: c.capitalDistractor,
      }));
    case 'currency':
      return withAnswer(
        w.countries.map((c) =>
          c.currency ? { subject: c.name, answer: c.currency, aliases: c.currencyAliases, distractor: null } : null,
        ),
      );
    case 'language':
      return withAnswer(
        w.countries.map((c) =>
          c.language ? { subject: c.name, answer: c.language, aliases: c.languageAliases, distractor: null } : null,
        ),
      );
    case 'symbol':
      return w.elements.map((e) => ({
        subject: e.name,
        answer: e.symbol,
        aliases: [e.symbol],
        distractor: e.distractor,
      }));
    case 'author':
      return w.books.map((b) => ({
        subject: b.title,
        answer: b.author,
        aliases: [b.author, ...b.aliases],
        distractor: b.distractor,
      }));
    case 'painter':
      return w.paintings.map((p) => ({
        subject: p.title,
        answer: p.painter,
        aliases: [p.painter, ...p.aliases],
        distractor: p.distractor,
      }));
    case 'inventor':
      return w.inventions.map((i) => ({
        subject: i.invention,
        answer: i.inventor,
        aliases: [i.inventor, ...i.aliases],
        distractor: i.distractor,
      }));
  }
}
