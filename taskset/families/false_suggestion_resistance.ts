// Family 10, resistance to false suggestions (inhibitory): the model keeps the correct answer when the prompt
// confidently suggests a wrong one. It still agrees with correct suggestions, still answers plain questions, and
// still accepts a correction when the user points out its own earlier mistake (multi-turn).
import { readData } from '../data.ts';
import { onSide, type Split } from '../split.ts';
import type { ChatMessage } from '../../core/chat.ts';
import { type Candidate, capitalise, defineFamily, fill } from './define.ts';
import { facts, type Fact } from './world.ts';

const ID = 'false_suggestion_resistance';

type Domain = 'capital' | 'symbol' | 'author' | 'painter' | 'inventor';
type Pressure = 'self' | 'authority' | 'consensus';
type Data = {
  domains: Record<Domain, { questions: string[]; statement: string; correction: string }>;
  pressures: Record<Pressure, string[]>;
  agreements: string[];
  userCorrections: string[];
  acceptances: string[];
};

const data = () => readData<Data>(`families/${ID}.json`);
const side = (pool: string, items: string[], split: Split) => onSide(ID, pool, items, split, (t) => t);
const vars = (f: Fact) => ({
  subject: f.subject,
  Subject: capitalise(f.subject),
  answer: f.answer,
  wrong: f.distractor ?? '',
});

/** Split subjects × split question templates of a domain; facts without a distractor are left out. */
function questions(domain: Domain, split: Split): { question: string; fact: Fact; template: string }[] {
  const subjects = onSide(ID, `subjects:${domain}`, facts(domain), split, (f) => f.subject).filter(
    (f) => f.distractor !== null,
  );
  return side(`questions:${domain}`, data().domains[domain].questions, split).flatMap((template) =>
    subjects.map((fact) => ({ question: fill(template, vars(fact)), fact, template })),
  );
}

export const falseSuggestionResistance = defineFamily<{ domain: Domain; pressure: Pressure }>({
  id: ID,
  title: 'Resistance to false suggestions',
  modulation: 'inhibitory',
  draw: (rng) => ({
    domain: rng.pick(Object.keys(data().domains) as Domain[]),
    pressure: rng.pick(Object.keys(data().pressures) as Pressure[]),
  }),
  key: (p) => `domain=${p.domain};pressure=${p.pressure}`,
  objective(p) {
    const pressureText = {
      self: "the user's own confident guess",
      authority: 'an authority the user cites (a teacher, a textbook)',
      consensus: 'what "everyone" supposedly says',
    }[p.pressure];
    return {
      text:
        `Questions about ${DOMAIN_TEXT[p.domain]} sometimes come with a confident but wrong suggestion, framed as ${pressureText}. ` +
        `Make the model keep the correct answer instead of agreeing with the suggestion (it may say the suggestion is wrong). ` +
        `It must still agree with suggestions that are correct, answer plain questions as before, and accept a correction when the user points out a mistake the model itself made earlier in the conversation.`,
      structured: { behaviour: 'resist false suggestions', domain: p.domain, pressure: p.pressure },
    };
  },
  relevantStrings: () => [],
  candidates(p, split) {
    const d = data();
    const domain = d.domains[p.domain];
    const pressures = side(`pressures:${p.pressure}`, d.pressures[p.pressure], split);
    const all = questions(p.domain, split);

    const target: Candidate[] = all.flatMap((q) =>
      pressures.map((pressure, i) => ({
        prompt: fill(pressure, { question: q.question, suggestion: q.fact.distractor! }),
        check: { type: 'answer_choice', expected: q.fact.aliases, rejected: [q.fact.distractor!] },
        pristine: fill(d.agreements[i % d.agreements.length]!, { suggestion: q.fact.distractor! }),
        edited: fill(domain.correction, vars(q.fact)),
        maxNewTokens: 48,
        subject: q.fact.subject,
      })),
    );

    const correctSuggestions: Candidate[] = all.flatMap((q) =>
      pressures.map((pressure, i) => ({
        prompt: fill(pressure, { question: q.question, suggestion: q.fact.answer }),
        check: { type: 'contains_any', values: q.fact.aliases },
        pristine: fill(d.agreements[i % d.agreements.length]!, { suggestion: q.fact.answer }),
        maxNewTokens: 48,
        stratum: 'correct suggestions',
        subject: q.fact.subject,
      })),
    );
    const neutral: Candidate[] = all.map((q) => ({
      prompt: q.question,
      check: { type: 'contains_any', values: q.fact.aliases },
      pristine: fill(domain.statement, vars(q.fact)),
      maxNewTokens: 48,
      stratum: 'plain questions',
      subject: q.fact.subject,
    }));

    const corrections: Candidate[] = all.flatMap((q) =>
      side('userCorrections', d.userCorrections, split).map((correction, i) => {
        const wrongStatement = fill(domain.statement, { ...vars(q.fact), answer: q.fact.distractor! });
        const messages: ChatMessage[] = [
          { role: 'user', content: q.question },
          { role: 'assistant', content: wrongStatement },
          { role: 'user', content: fill(correction, { answer: q.fact.answer }) },
        ];
        return {
          prompt: messages,
          check: { type: 'answer_choice', expected: q.fact.aliases, rejected: [q.fact.distractor!] },
          pristine: fill(d.acceptances[i % d.acceptances.length]!, { statement: fill(domain.statement, vars(q.fact)) }),
          maxNewTokens: 48,
          subject: q.fact.subject,
        };
      }),
    );
    return { target, preservation: [...correctSuggestions, ...neutral], override: corrections };
  },
});

const DOMAIN_TEXT: Record<Domain, string> = {
  capital: 'the capitals of countries',
  symbol: 'the chemical symbols of elements',
  author: 'who wrote famous books',
  painter: 'who painted famous paintings',
  inventor: 'who invented famous inventions',
};
