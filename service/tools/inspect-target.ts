// inspect_target: teacher-forced next-token log-probabilities, top-k and residual streams (as array handles) on the
// episode's weights. Positions are token indices of the full sequence (prompt + continuation), NumPy-style negatives.
import type { InspectTargetArgs } from '../api/index.ts';
import type { Charge } from '../budgets.ts';
import type { InspectResult } from '../../engine/index.ts';
import { IwiError, isIwiError } from '../errors.ts';
import type { Slice } from '../queue.ts';
import type { Target } from '../target.ts';
import { checkSequence, type ToolContext } from './context.ts';

const DEFAULT_POSITIONS = 8;

export async function inspectTarget(target: Target, context: ToolContext, args: InspectTargetArgs, slice: Slice) {
  const layers = args.layers ?? [];
  const topK = args.top_k ?? 5;
  const { num_hidden_layers: L, hidden_size: H } = target.checkpoint.config;
  for (const layer of layers)
    if (layer >= L)
      throw new IwiError('REQUEST_INVALID', `layer ${layer} does not exist: the target has layers 0…${L - 1}`);

  const requests = args.sequences.map((s) => {
    const prompt = target.promptIds(checkSequence(s));
    const ids = s.continuation ? target.promptIds(checkSequence(s), s.continuation) : prompt;
    const [start, end] = resolvePositions(args.positions, ids.length, s.continuation ? prompt.length - 1 : undefined);
    return { ids, start, end, continuationStart: s.continuation ? prompt.length : undefined };
  });
  const charge: Charge = {
    tool: 'inspect_target',
    sequences: requests.length,
    evaluations: requests.length,
    layers: layers.length,
    positions: Math.max(...requests.map((r) => r.end - r.start)),
    forwardTokens: requests.reduce((sum, r) => sum + r.ids.length, 0),
  };
  context.ledger.check(charge);
  let results: InspectResult[];
  try {
    results = await target.engine.inspect(requests, {
      layers,
      topK,
      weights: context.weights,
      between: slice.between,
      signal: slice.signal,
    });
  } catch (error) {
    if (isIwiError(error, 'CALL_TIME_LIMIT')) context.ledger.charge(charge); // it used the target (see run-target.ts)
    throw error;
  }
  context.ledger.charge(charge);

  const token = (id: number) => ({ id, token: target.tokenizer.idToToken(id) ?? null });
  return {
    sequences: results.map((result, i) => {
      const request = requests[i]!;
      const hidden: Record<string, unknown> = {};
      for (const layer of layers) {
        const rows = result.hidden[layer]!;
        const data = new Float32Array(rows.length * H);
        rows.forEach((row, k) => data.set(row, k * H));
        const origin = `inspect_target layer ${layer} positions [${request.start}, ${request.end}) of sequence ${i}`;
        hidden[String(layer)] = {
          ...context.store.createHandle(data, [rows.length, H], origin),
          row_l2_norms: rows.map((row) => Math.hypot(...row)),
        };
      }
      return {
        tokens: request.ids.length,
        continuation_start: request.continuationStart ?? null,
        positions: result.positions.map((p, k) => ({
          position: p,
          ...token(request.ids[p]!),
          next:
            p + 1 < request.ids.length ? { ...token(request.ids[p + 1]!), logprob: result.nextTokenLogprobs[k] } : null,
          top_k: result.topK[k]!.ids.map((id, j) => ({ ...token(id), logprob: result.topK[k]!.logprobs[j] })),
        })),
        ...(request.continuationStart !== undefined
          ? {
              continuation_logprob: sumContinuation(
                result.positions,
                result.nextTokenLogprobs,
                request.continuationStart - 1,
              ),
            }
          : {}),
        hidden,
      };
    }),
    forward_tokens: charge.forwardTokens,
  };
}

/** [start, stop) with negatives from the end; default: the continuation's predicting positions, else the last 8. */
function resolvePositions(
  positions: readonly number[] | undefined,
  length: number,
  continuationFrom: number | undefined,
): [number, number] {
  if (!positions)
    return continuationFrom !== undefined
      ? [continuationFrom, length - 1]
      : [Math.max(0, length - DEFAULT_POSITIONS), length];
  const [rawStart, rawStop] = positions as [number, number]; // the schema gives exactly two
  const start = rawStart < 0 ? length + rawStart : rawStart;
  const stop = rawStop < 0 ? length + rawStop : rawStop;
  if (!(0 <= start && start < stop && stop <= length)) {
    throw new IwiError(
      'REQUEST_INVALID',
      `positions [${rawStart}, ${rawStop}) do not select a non-empty range of the ${length}-token sequence`,
    );
  }
  return [start, stop];
}

/** Log-probability of the continuation: the sum over the positions that predict its tokens, when all are inspected. */
function sumContinuation(positions: number[], logprobs: number[], first: number): number | null {
  const picked = positions
    .map((p, k) => (p >= first ? logprobs[k]! : undefined))
    .filter((v): v is number => v !== undefined && !Number.isNaN(v));
  return positions[0]! <= first ? picked.reduce((a, b) => a + b, 0) : null;
}
