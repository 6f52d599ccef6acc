// The ten families of IWIBench 0.2.2, listed explicitly in the order of families.md (nothing is discovered from
// file names).
import { FAMILY_IDS, type FamilyId } from '../types.ts';
import { aliasAcquisition } from './alias_acquisition.ts';
import { answerLengthControl } from './answer_length_control.ts';
import { defaultResponseLanguage } from './default_response_language.ts';
import type { FamilySpec } from './define.ts';
import { falseSuggestionResistance } from './false_suggestion_resistance.ts';
import { lexicalInhibition } from './lexical_inhibition.ts';
import { localFactualUpdate } from './local_factual_update.ts';
import { outputCodeRemapping } from './output_code_remapping.ts';
import { selectiveFactualWithholding } from './selective_factual_withholding.ts';
import { structuredResponseDefault } from './structured_response_default.ts';
import { terminologyPreference } from './terminology_preference.ts';

export const FAMILIES: readonly FamilySpec[] = [
  aliasAcquisition,
  outputCodeRemapping,
  lexicalInhibition,
  terminologyPreference,
  defaultResponseLanguage,
  structuredResponseDefault,
  answerLengthControl,
  localFactualUpdate,
  selectiveFactualWithholding,
  falseSuggestionResistance,
];

export function familyById(id: string): FamilySpec {
  const family = FAMILIES.find((f) => f.id === id);
  if (!family) throw new Error(`unknown family "${id}"; known: ${FAMILY_IDS.join(', ')}`);
  return family;
}

export function isFamilyId(id: string): id is FamilyId {
  return (FAMILY_IDS as readonly string[]).includes(id);
}
