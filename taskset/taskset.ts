// Thin TypeScript counterparts of the Verifiers v1 interfaces: a Taskset loads Tasks for a list of (family, seed)
// and declares its Toolset; a Task sets an episode up (the spec handed to the service) and scores it; the null
// harness gives the editor the toolset's tools and nothing else (no extra tools, no hidden helpers). The concrete
// tool schemas belong to the service (service/tools/schemas.ts) and come in as constructor input.
import type { Tokenizer } from '../service/model/tokenizer.ts';
import { eligibility, type Eligibility } from './eligibility.ts';
import { editorView, episodeSpec } from './episode.ts';
import { scoreEpisode, type EpisodeScore, type Outputs } from './scoring.ts';
import type { EditorView, EpisodeSpec, FamilyId } from './types.ts';

export type JSONSchema = Record<string, unknown>;
export type ToolDefinition = { name: string; description: string; parameters: JSONSchema };
export type Toolset = { tools: readonly ToolDefinition[] };

export type EpisodeRef = { family: FamilyId | string; seed: number; controlSeed?: number };

export class Task {
  constructor(
    readonly spec: EpisodeSpec,
    readonly toolset: Toolset,
  ) {}

  get id(): string {
    return `${this.spec.family}/seed=${this.spec.seed}/control-seed=${this.spec.controlSeed}`;
  }

  /** The full spec, for the service (POST /episodes): it holds the grading inputs, so never show it to the editor. */
  setup(): EpisodeSpec {
    return this.spec;
  }

  /** What the editor may see of this task. */
  editorView(): EditorView {
    return editorView(this.spec);
  }

  /** The score of the pristine (base) and patched (edited) outputs of every graded item. */
  score(base: Outputs, edited: Outputs): EpisodeScore {
    return scoreEpisode(this.spec, base, edited);
  }

  /** Calibration: does the base show the capability and leave headroom? */
  eligibility(base: Outputs): Eligibility {
    return eligibility(this.spec, base);
  }
}

export class Taskset {
  readonly toolset: Toolset;
  private readonly tokenizer: Tokenizer;
  private readonly episodes: readonly EpisodeRef[];

  constructor(options: { tokenizer: Tokenizer; toolset: Toolset; episodes: readonly EpisodeRef[] }) {
    assertToolset(options.toolset);
    this.toolset = options.toolset;
    this.tokenizer = options.tokenizer;
    this.episodes = options.episodes;
  }

  /** One task per episode, in the order given; building is deterministic, so loading twice gives equal tasks. */
  tasks(): Task[] {
    return this.episodes.map((e) => this.task(e));
  }

  task(episode: EpisodeRef): Task {
    const spec = episodeSpec(episode.family, episode.seed, { tokenizer: this.tokenizer, controlSeed: episode.controlSeed });
    return new Task(spec, this.toolset);
  }
}

/** The editor's side of an episode under the null harness: the toolset's tools, nothing added, nothing removed. */
export type Harness = { name: 'null'; tools: readonly ToolDefinition[] };

export function nullHarness(toolset: Toolset): Harness {
  assertToolset(toolset);
  return Object.freeze({ name: 'null' as const, tools: Object.freeze([...toolset.tools]) });
}

function assertToolset(toolset: Toolset): void {
  const names = toolset.tools.map((t) => t.name);
  const duplicate = names.find((n, i) => names.indexOf(n) !== i);
  if (duplicate !== undefined) throw new Error(`toolset: tool "${duplicate}" is declared twice`);
  for (const tool of toolset.tools) {
    if (!tool.name || !tool.description || typeof tool.parameters !== 'object' || tool.parameters === null) {
      throw new Error(`toolset: tool "${tool.name}" needs a name, a description and a JSON Schema for its parameters`);
    }
  }
}
