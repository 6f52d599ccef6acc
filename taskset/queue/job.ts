// A job on the queue: one attempt (an episode, an editor, a repeat, the settings that decide its result), its id the
// attempt's id: readable (family, seed, editor label, repeat) and ending in the settings' short hash, so that
// enqueuing the same attempt again adds nothing and another configuration is never mistaken for it. One definition,
// checked by every worker before it runs anything: a malformed job fails at once with the reason. It names the
// editor but never holds a key or a token (those stay with each worker).
import { Ajv } from 'ajv';
import Type, { type Static } from 'typebox';
import { attemptId } from '../attempt-folder.ts';
import { FAMILY_IDS, type FamilyId } from '../types.ts';
import { AttemptSettingsSchema, settingsHash, type AttemptSettings } from './settings.ts';

export const JOB_FORMAT = 'iwibench-attempt-job/3';

export const AttemptJobSchema = Type.Object(
  {
    format: Type.Literal(JOB_FORMAT),
    id: Type.String({ minLength: 1 }),
    family: Type.Unsafe<FamilyId>({ type: 'string', enum: [...FAMILY_IDS] }),
    seed: Type.Integer({ minimum: 0 }),
    /** Which repeat of the episode with this editor (the `-a<k>` of the id). */
    repeat: Type.Integer({ minimum: 0 }),
    editor_label: Type.String({ minLength: 1 }),
    settings: AttemptSettingsSchema,
    /** settingsHash(settings): the id's last part. */
    hash: Type.String({ pattern: '^[0-9a-f]{8}$' }),
    /** The calibration file the job came from (recorded in results.json's args). */
    calibration: Type.String(),
  },
  { additionalProperties: false },
);
export type AttemptJob = Static<typeof AttemptJobSchema>;

const validate = new Ajv({ allErrors: true, strict: false }).compile(AttemptJobSchema);

/** The readable part of an attempt's id: family, seed, editor label, repeat (run-pilot's attempt id). */
export const readableId = (job: Pick<AttemptJob, 'family' | 'seed' | 'editor_label' | 'repeat'>) =>
  attemptId(job.family, job.seed, job.editor_label, job.repeat);

/** The job's data as an AttemptJob, or an error saying everything wrong with it. */
export function parseAttemptJob(data: unknown): AttemptJob {
  if (!validate(data)) {
    const problems = (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
    throw new Error(`malformed job (not ${JOB_FORMAT}): ${[...new Set(problems)].join('; ')}`);
  }
  const job = data as AttemptJob;
  const hash = settingsHash(job.settings);
  if (job.hash !== hash) throw new Error(`malformed job: its hash ${job.hash} is not its settings' ${hash}`);
  const expected = `${readableId(job)}-h${hash}`;
  if (job.id !== expected) throw new Error(`malformed job: its id "${job.id}" is not its attempt's id "${expected}"`);
  return job;
}

/** The job of one attempt. */
export function attemptJob(
  episode: { family: FamilyId; seed: number },
  editorLabel: string,
  repeat: number,
  settings: AttemptSettings,
  calibration: string,
): AttemptJob {
  const hash = settingsHash(settings);
  const readable = readableId({ ...episode, editor_label: editorLabel, repeat });
  return {
    format: JOB_FORMAT,
    id: `${readable}-h${hash}`,
    family: episode.family,
    seed: episode.seed,
    repeat,
    editor_label: editorLabel,
    settings,
    hash,
    calibration,
  };
}
