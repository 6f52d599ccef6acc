// run_target: greedy generation on the episode's weights (and, with compare_base, on the pristine weights too).
import type { RunTargetArgs } from '../api/index.ts';
import type { Charge } from '../budgets.ts';
import type { GenerateResult } from '../../engine/index.ts';
import { isIwiError } from '../errors.ts';
import type { Slice } from '../queue.ts';
import type { Target } from '../target.ts';
import { checkSequence, type ToolContext } from './context.ts';

export async function runTarget(target: Target, context: ToolContext, args: RunTargetArgs, slice: Slice) {
  const maxNewTokens = args.max_new_tokens ?? 64;
  const compare = args.compare_base ?? false;
  const prompts = args.sequences.map((s) => target.promptIds(checkSequence(s)));
  const passes = compare ? 2 : 1;
  const charge: Charge = {
    tool: 'run_target',
    sequences: prompts.length,
    evaluations: prompts.length * passes,
    maxNewTokens,
    forwardTokens: passes * prompts.reduce((sum, p) => sum + p.length + maxNewTokens, 0),
  };
  context.ledger.check(charge);
  const control = { between: slice.between, signal: slice.signal };
  let edited: GenerateResult[];
  let base: GenerateResult[] | undefined;
  try {
    edited = await target.engine.generate(prompts, { maxNewTokens, weights: context.weights, ...control });
    base = compare
      ? await target.engine.generate(prompts, { maxNewTokens, weights: target.pristine, ...control })
      : undefined;
  } catch (error) {
    // A call stopped by the time limit has used the target: it is charged its reservation (a cancelled one is not).
    if (isIwiError(error, 'CALL_TIME_LIMIT')) context.ledger.charge(charge, charge.forwardTokens!);
    throw error;
  }
  const evaluated = [...edited, ...(base ?? [])].reduce((sum, r) => sum + r.promptTokens + r.outputTokens, 0);
  context.ledger.charge(charge, evaluated);
  const view = (r: GenerateResult) => ({
    text: target.tokenizer.decode(r.outputIds),
    prompt_tokens: r.promptTokens,
    output_tokens: r.outputTokens,
    stop_reason: r.stopReason,
  });
  return {
    outputs: edited.map((r, i) => ({ ...view(r), ...(base ? { base: view(base[i]!) } : {}) })),
    forward_tokens: evaluated,
  };
}
