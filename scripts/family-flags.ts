// The `--family`/`--families` flags' values, apart from scripts/args.ts so that parsing flags (every command, and
// `--help`) does not load the taskset.
import { FAMILY_IDS, type FamilyId } from '../taskset/index.ts';
import { nearest } from './args.ts';

/** `--families a,b`: the ids listed, or all ten. */
export function familyList(text: string | undefined): FamilyId[] {
  return (
    text
      ? text
          .split(',')
          .map((f) => f.trim())
          .filter(Boolean)
      : [...FAMILY_IDS]
  ) as FamilyId[];
}

export function familyProblems(text: string | undefined): string[] {
  return familyList(text)
    .filter((f) => !(FAMILY_IDS as readonly string[]).includes(f))
    .map((f) => {
      const near = nearest(f, FAMILY_IDS);
      return `unknown family "${f}"${near ? ` (did you mean ${near}?)` : ''} (known: ${FAMILY_IDS.join(', ')})`;
    });
}
