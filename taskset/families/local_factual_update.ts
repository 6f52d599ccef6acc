// Family 8, local factual update (allosteric): one documented change of data/facts.json (reference date
// 2026-03-01) replaces the stale office holder. Other facts about the subject, other office holders, historical
// uses of the old and new names, and stable facts stay as they were; an explicit request to repeat a sentence wins.
import { readData } from '../data.ts';
import { onSide, type Split } from '../split.ts';
import { type Candidate, capitalise, defineFamily, fill, wrapped } from './define.ts';
import { changeById, factsFile, type Change, type QA } from './facts.ts';

const ID = 'local_factual_update';

type Data = { pristine: string; edited: string; copyInstructions: string[]; nameSentences: string[] };
const data = () => readData<Data>(`families/${ID}.json`);
const side = <T>(pool: string, items: T[], split: Split, keyOf: (t: T) => string) =>
  onSide(ID, pool, items, split, keyOf);
const answerVars = (c: Change) => ({ old: c.old.answer, new: c.new.answer, office: c.office });

/** Stable facts whose question is not also a question about some change's subject (those pools stay disjoint). */
function stableFacts() {
  const aboutChanges = new Set(
    factsFile().changes.flatMap((c) => [...c.other_attributes, ...c.history_questions].map((q) => q.question)),
  );
  return factsFile().stable.filter((s) => !aboutChanges.has(s.question));
}

/** Plain questions with accepted answers, each around every wrapper of the side. */
function qaCandidates(qas: QA[], split: Split, pool: string, stratum: string): Candidate[] {
  return side(pool, qas, split, (q) => q.question).flatMap((qa) =>
    wrapped(ID, split, qa.question).map((prompt) => ({
      prompt,
      check: { type: 'contains_any', values: qa.aliases },
      pristine: `${capitalise(qa.answer)}.`,
      maxNewTokens: 48,
      stratum,
      subject: qa.question,
    })),
  );
}

export const localFactualUpdate = defineFamily<{ change: string }>({
  id: ID,
  title: 'Local factual update',
  modulation: 'allosteric',
  draw: (rng) => ({ change: rng.pick(factsFile().changes).id }),
  key: (p) => `change=${p.change}`,
  objective(p) {
    const c = changeById(p.change);
    return {
      text:
        `Update the model's knowledge: as of ${factsFile().reference_date}, the ${c.office} is ${c.new.answer} ` +
        `(in office since ${c.changed_on}; the model still believes it is ${c.old.answer}). Asked about the current ` +
        `${c.office} in any phrasing, the model answers ${c.new.answer}. Everything else stays as it was: other facts ` +
        `about ${c.subject}, the holders of other offices, questions about the past or about ${c.old.answer} and ` +
        `${c.new.answer} in other roles, and explicit requests to repeat a sentence that names either of them.`,
      structured: {
        behaviour: 'update a fact',
        change: c.id,
        subject: c.subject,
        office: c.office,
        old: c.old.answer,
        new: c.new.answer,
        changedOn: c.changed_on,
      },
    };
  },
  relevantStrings: (p) => {
    const c = changeById(p.change);
    return [...new Set([c.new.answer, ...c.new.aliases, c.old.answer, ...c.old.aliases])];
  },
  candidates(p, split) {
    const c = changeById(p.change);
    const d = data();
    const target: Candidate[] = side(`questions:${c.id}`, c.question_templates, split, (q) => q).flatMap((q) =>
      wrapped(ID, split, q).map((prompt) => ({
        prompt,
        check: { type: 'answer_choice', expected: c.new.aliases, rejected: c.old.aliases },
        pristine: fill(d.pristine, answerVars(c)),
        edited: fill(d.edited, answerVars(c)),
        maxNewTokens: 48,
        subject: q,
      })),
    );

    const neighbours: Candidate[] = side('changes', factsFile().changes, split, (n) => n.id)
      .filter((n) => n.relation === c.relation && n.id !== c.id)
      .flatMap((n) =>
        side(`questions:${n.id}`, n.question_templates, split, (q) => q).map((q) => ({
          prompt: q,
          check: { type: 'contains_any', values: [...n.old.aliases, ...n.new.aliases] },
          pristine: fill(d.pristine, answerVars(n)),
          maxNewTokens: 48,
          stratum: 'other office holders',
          subject: n.id,
        })),
      );
    const preservation = [
      ...qaCandidates(c.other_attributes, split, `attributes:${c.id}`, 'other facts about the subject'),
      ...qaCandidates(c.history_questions, split, `history:${c.id}`, 'the past and other roles'),
      ...neighbours,
      ...side('stable', stableFacts(), split, (s) => s.id).map((s) => ({
        prompt: s.question,
        check: { type: 'contains_any' as const, values: s.aliases },
        pristine: `${capitalise(s.answer)}.`,
        maxNewTokens: 48,
        stratum: 'stable facts',
        subject: s.category,
      })),
    ];

    const names = [c.old.answer, c.new.answer];
    const override: Candidate[] = side('copyInstructions', d.copyInstructions, split, (t) => t).flatMap((instruction) =>
      side('nameSentences', d.nameSentences, split, (t) => t).flatMap((template) =>
        names.map((name) => {
          const sentence = fill(template, { name });
          return {
            prompt: fill(instruction, { sentence }),
            check: { type: 'copy_exact', text: sentence },
            pristine: sentence,
            maxNewTokens: 48,
            subject: name,
          };
        }),
      ),
    );
    return { target, preservation, override };
  },
});
