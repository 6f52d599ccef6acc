// The taskset's front door, after the Verifiers v1 interfaces: a Taskset loads Tasks and declares its Toolset; a
// Task sets its episode up on the service, scores the patched outputs against the pristine ones and decides
// calibration's eligibility. calibrate, run-pilot, run-prime, replay-patch and evaluate-patch reach episodes only
// through here, and the harness offers the editor the Task's Toolset and no tool of its own (design.md's "null"
// harness: runEditor in harness/run.ts).
import type { Tokenizer } from '../engine/index.ts';
import type { ToolDefinition } from '../service/api/index.ts';
import { TOOL_DEFINITIONS } from '../service/tools/schemas.ts';
import { eligibility, type Eligibility } from './eligibility.ts';
import { editorView, episodeSpec } from './episode.ts';
import { scoreEpisode, type EpisodeScore, type Outputs } from './scoring.ts';
import type { EpisodeCreate } from './service-client.ts';
import type { EpisodeSpec, FamilyId, Item } from './types.ts';

/** The tools an editor may call, as the editor's API is given them. */
export type Toolset = { readonly tools: readonly ToolDefinition[] };

/** A frozen toolset; a name declared twice or a tool without a description or parameter schema is refused. */
export function defineToolset(tools: readonly ToolDefinition[]): Toolset {
  const names = tools.map((t) => t.name);
  const duplicate = names.find((n, i) => names.indexOf(n) !== i);
  if (duplicate !== undefined) throw new Error(`toolset: tool "${duplicate}" is declared twice`);
  for (const tool of tools) {
    if (!tool.name || !tool.description || typeof tool.parameters !== 'object' || tool.parameters === null) {
      throw new Error(`toolset: tool "${tool.name}" needs a name, a description and a JSON Schema for its parameters`);
    }
  }
  return Object.freeze({ tools: Object.freeze([...tools]) });
}

/** The service's four tools, whose schemas the service validates every call against: the one place they enter the taskset. */
export const SERVICE_TOOLSET: Toolset = defineToolset(TOOL_DEFINITIONS);

export type EpisodeRef = { family: FamilyId | string; seed: number; controlSeed?: number };

/** What POST /episodes gets of a task: the editor's view, never a grading input (the caller adds label and budgets). */
export type EpisodeSetup = Pick<EpisodeCreate, 'family' | 'seed' | 'objective' | 'relevant_token_ids' | 'practice'>;

export class Task {
  constructor(
    /** The full spec: it holds the grading inputs, so it never goes to the service or the editor. */
    readonly spec: EpisodeSpec,
    readonly toolset: Toolset,
  ) {}

  /** The episode as the service sets it up for the editor. */
  setup(): EpisodeSetup {
    const view = editorView(this.spec);
    return {
      family: view.family,
      seed: view.seed,
      objective: view.objective,
      relevant_token_ids: view.relevantTokenIds,
      practice: view.practice,
    };
  }

  /** The score of the pristine (base) and patched (edited) outputs of every graded item. */
  score(base: Outputs, edited: Outputs): EpisodeScore {
    return scoreEpisode(this.spec, base, edited);
  }

  /** Calibration: does the base show the capability and leave headroom? */
  eligibility(base: Outputs): Eligibility {
    return eligibility(this.spec, base);
  }

  /**
   * A smoke-test view: the first `n` items of each kind (target, preservation, override, controls); `undefined`
   * keeps the whole task. Results made from it record `items_per_kind` in their args; published numbers use whole tasks.
   */
  subset(n: number | undefined): Task {
    if (n === undefined) return this;
    if (!Number.isInteger(n) || n < 1) throw new Error(`items per kind must be a positive integer, got ${n}`);
    const { target, preservation, override } = this.spec.terminal;
    const terminal = {
      target: target.slice(0, n),
      preservation: preservation.slice(0, n),
      override: override.slice(0, n),
    };
    return new Task({ ...this.spec, terminal, controls: this.spec.controls.slice(0, n) }, this.toolset);
  }

  /** The same task graded on other terminal items (replay-patch: the ones its results recorded). */
  withTerminal(terminal: EpisodeSpec['terminal']): Task {
    return new Task({ ...this.spec, terminal }, this.toolset);
  }

  /** The same task graded on other general controls (replay-patch: new controls and the original ones). */
  withControls(controls: Item[]): Task {
    return new Task({ ...this.spec, controls }, this.toolset);
  }
}

export class Taskset {
  readonly toolset: Toolset = SERVICE_TOOLSET;
  private readonly tokenizer: Tokenizer;

  /** The tokenizer is the target's: it gives each task its relevant token ids. */
  constructor(options: { tokenizer: Tokenizer }) {
    this.tokenizer = options.tokenizer;
  }

  /** The task of (family, seed, control seed; the seed unless given): deterministic, so loading twice gives equal tasks. */
  task(episode: EpisodeRef): Task {
    const spec = episodeSpec(episode.family, episode.seed, {
      tokenizer: this.tokenizer,
      controlSeed: episode.controlSeed,
    });
    return new Task(spec, this.toolset);
  }
}
