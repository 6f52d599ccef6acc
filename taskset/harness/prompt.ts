// What the editor reads: a system prompt (the benchmark, the tools, how an episode ends) and a first user message
// built from the service's brief (objective, compact manifest, relevant tokens, practice examples, budgets). The
// tools' full descriptions and schemas go with every request as the API's `tools`, so they are not repeated here.
import type { ToolName } from '../../service/api/index.ts';
import type { EpisodeBrief } from '../service-client.ts';

/** One line per tool; a Record so that a fifth tool cannot be added without saying what it is for. */
const TOOL_SUMMARIES: Record<ToolName, string> = {
  read_weights: 'read tensors: manifest rows, slices of values, summary statistics.',
  write_weights: 'edit tensors: replace, fill, scale, copy, low_rank_add, and revert to an earlier state.',
  run_target: 'greedy generation from your edited target, optionally side by side with the pristine one.',
  inspect_target: 'teacher-forced log-probabilities, top-k next tokens and residual streams of your edited target.',
};

export function systemPrompt(brief: EpisodeBrief, maxTurns: number): string {
  const { target } = brief;
  const turns = Math.min(maxTurns, brief.budget.limits.turns ?? maxTurns);
  return [
    'You are the editor in IWIBench, a benchmark of intraweight injection: you give a target language model a requested behaviour by editing its weights directly, while it keeps answering everything else as before.',
    '',
    `The target is ${target.model} (Gemma 3, ${target.layers} decoder layers, hidden size ${target.hidden_size}). You work on your own copy of its weights through four tools:`,
    ...Object.entries(TOOL_SUMMARIES).map(([name, summary]) => `- ${name}: ${summary}`),
    '',
    'Your only artefact is the weight patch: the edits you have made when the episode ends. The patched target is then evaluated in a fresh process, with no system prompt or other help, on prompts you have not seen: it must show the requested behaviour with correct content, and still answer unrelated control questions (arithmetic, facts, exact copying) that the pristine target answers correctly. A patch that changes nothing scores zero.',
    '',
    'Each of your replies is one turn. The tool calls in a reply run in order and their results come back to you; an error also comes back as the tool result, so you can correct the call. When you are done, reply without any tool call: that reply ends the episode and submits your current weights.',
    `The episode also ends, submitting your current weights, after ${turns} turns, or when a tool call is refused because a per-episode budget is exhausted (a call over a per-call limit is only refused: try it smaller). The budgets are in the first message, and every tool result reports what remains.`,
  ].join('\n');
}

export function firstMessage(brief: EpisodeBrief): string {
  const objective = typeof brief.objective === 'string' ? brief.objective : brief.objective.text;
  const { target } = brief;
  const sections = [
    ['# Objective', objective],
    [
      '# Target',
      `${target.model} at revision ${target.revision}: ${target.layers} decoder layers, hidden size ${target.hidden_size}; ${describeLayerTypes(target.layer_types)}.`,
      `Chat template: ${target.chat_template}`,
    ],
    [
      '# Tensors',
      'One line per tensor pattern: name [shape] dtype writable|fixed; `layers.{a..b}` stands for each layer a to b.',
      ...brief.manifest,
    ],
    [
      '# Relevant tokens (id: token)',
      ...orNone(
        brief.relevant_tokens.map(({ id, token }) => `${id}: ${token === null ? '(no token)' : JSON.stringify(token)}`),
      ),
    ],
    [
      '# Practice examples',
      'Public examples of the requested behaviour; the evaluation uses other prompts.',
      ...orNone(brief.practice.map(describePractice)),
    ],
    [
      '# Budgets',
      ...Object.entries(brief.budget.limits).map(
        ([name, limit]) => `${name}: ${limit} ${name in brief.budget.remaining ? 'per episode' : 'per call'}`,
      ),
    ],
    [
      '# Tool limits',
      Object.entries(brief.limits)
        .map(([name, value]) => `${name} ${value}`)
        .join(', '),
    ],
  ];
  return sections.map((lines) => lines.join('\n')).join('\n\n');
}

/** `full_attention at layers 5, 11; sliding_attention elsewhere`: the most common type is "elsewhere". */
export function describeLayerTypes(types: string[]): string {
  const layers = new Map<string, number[]>();
  types.forEach((type, layer) => layers.set(type, [...(layers.get(type) ?? []), layer]));
  const byCount = [...layers.entries()].sort((a, b) => b[1].length - a[1].length);
  if (byCount.length === 0) return 'no layer types given';
  const [common, ...rest] = byCount;
  if (rest.length === 0) return `all layers ${common![0]}`;
  return [
    ...rest.map(([type, indices]) => `${type} at layer${indices.length > 1 ? 's' : ''} ${indices.join(', ')}`),
    `${common![0]} elsewhere`,
  ].join('; ');
}

function describePractice(example: EpisodeBrief['practice'][number], index: number): string {
  return [
    `## Example ${index + 1}`,
    ...example.messages.map((message) => `[${message.role}] ${message.content}`),
    `[expected response] ${example.response}`,
    ...(example.note ? [`(note: ${example.note})`] : []),
  ].join('\n');
}

function orNone(lines: string[]): string[] {
  return lines.length > 0 ? lines : ['(none)'];
}
