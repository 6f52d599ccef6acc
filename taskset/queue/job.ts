// A job on the queue: one attempt (an episode, an editor, a repeat), its id the attempt's id, so that enqueuing the
// same attempt again adds nothing. One definition, checked by every worker before it runs anything: a malformed job
// fails at once with the reason. It names the editor but never holds a key or a token (those stay with each worker).
import { Ajv } from 'ajv';
import Type, { type Static } from 'typebox';
import { attemptId } from '../attempt.ts';
import { EDITOR_APIS, type EditorApi } from '../harness/index.ts';
import { FAMILY_IDS, type FamilyId } from '../types.ts';

export const JOB_FORMAT = 'iwibench-attempt-job/1';

export const AttemptJobSchema = Type.Object(
  {
    format: Type.Literal(JOB_FORMAT),
    id: Type.String({ minLength: 1 }),
    family: Type.Unsafe<FamilyId>({ type: 'string', enum: [...FAMILY_IDS] }),
    seed: Type.Integer({ minimum: 0 }),
    /** Which repeat of the episode with this editor (the `-a<k>` of the id). */
    repeat: Type.Integer({ minimum: 0 }),
    editor: Type.Object(
      {
        model: Type.String({ minLength: 1 }),
        label: Type.String({ minLength: 1 }),
        base_url: Type.Optional(Type.String({ minLength: 1 })),
        api: Type.Optional(Type.Unsafe<EditorApi>({ type: 'string', enum: [...EDITOR_APIS] })),
        reasoning_effort: Type.Optional(Type.String({ minLength: 1 })),
      },
      { additionalProperties: false },
    ),
    /** 0: whole episodes; N: the first N items of each kind (smoke tests). */
    items_per_kind: Type.Integer({ minimum: 0 }),
    /** The calibration file the job came from (recorded in results.json's args). */
    calibration: Type.String(),
  },
  { additionalProperties: false },
);
export type AttemptJob = Static<typeof AttemptJobSchema>;

const validate = new Ajv({ allErrors: true, strict: false }).compile(AttemptJobSchema);

/** The job's data as an AttemptJob, or an error saying everything wrong with it. */
export function parseAttemptJob(data: unknown): AttemptJob {
  if (!validate(data)) {
    const problems = (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
    throw new Error(`malformed job (not ${JOB_FORMAT}): ${[...new Set(problems)].join('; ')}`);
  }
  const job = data as AttemptJob;
  const expected = attemptId(job.family, job.seed, job.editor.label, job.repeat);
  if (job.id !== expected) throw new Error(`malformed job: its id "${job.id}" is not its attempt's id "${expected}"`);
  return job;
}

/** The job of one attempt. */
export function attemptJob(
  episode: { family: FamilyId; seed: number },
  editor: AttemptJob['editor'],
  repeat: number,
  record: { calibration: string; itemsPerKind: number },
): AttemptJob {
  return {
    format: JOB_FORMAT,
    id: attemptId(episode.family, episode.seed, editor.label, repeat),
    family: episode.family,
    seed: episode.seed,
    repeat,
    editor,
    items_per_kind: record.itemsPerKind,
    calibration: record.calibration,
  };
}
