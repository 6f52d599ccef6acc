// Which parts of a verdict a check actually tests: eligibility asks for "the content part of target items where the
// family has one", and a check that never tests content has none.
import type { Check } from '../types.ts';
import { DEFAULT_ROLE } from './checks.ts';

export function checkParts(check: Check): { behaviour: boolean; content: boolean } {
  switch (check.type) {
    case 'contains_any':
    case 'avoids_forms':
    case 'copy_exact':
    case 'number':
    case 'answer_choice': {
      const role = check.role ?? DEFAULT_ROLE[check.type];
      return { behaviour: role === 'behaviour', content: role === 'content' };
    }
    case 'word_band':
    case 'language':
    case 'prose':
    case 'abstains':
      return { behaviour: true, content: false };
    case 'json_exact_keys':
    case 'coded_label':
      return { behaviour: true, content: true };
    case 'not':
      return { behaviour: check.role === 'behaviour', content: check.role === 'content' };
    case 'all':
    case 'any': {
      const parts = check.checks.map(checkParts);
      return { behaviour: parts.some((p) => p.behaviour), content: parts.some((p) => p.content) };
    }
  }
}
