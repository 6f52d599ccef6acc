// Per-episode budgets, enforced by the service (design.md "Service"). One ledger per episode; every check happens
// before any work, and a refused call changes nothing. Reverting weights never restores a budget.
import { DEFAULT_BUDGETS } from './api/limits.ts';
import { IwiError, quote } from './errors.ts';

export type Budgets = { -readonly [K in keyof typeof DEFAULT_BUDGETS]: number };
export type BudgetKind = keyof Budgets;

/** Running totals of the limits that are spent (per-call limits are not). */
export type BudgetUse = {
  turns: number;
  tool_calls: number;
  forward_tokens: number;
  run_target_calls: number;
  run_target_sequence_evaluations: number;
  inspect_target_calls: number;
  inspect_target_sequence_evaluations: number;
};

export const EMPTY_USE: Readonly<BudgetUse> = Object.freeze({
  turns: 0,
  tool_calls: 0,
  forward_tokens: 0,
  run_target_calls: 0,
  run_target_sequence_evaluations: 0,
  inspect_target_calls: 0,
  inspect_target_sequence_evaluations: 0,
});

/** The budgets of an episode: the defaults with `overrides` (own keys only: `toString` is no budget) applied. */
export function resolveBudgets(overrides: Partial<Budgets> = {}): Budgets {
  const budgets = { ...DEFAULT_BUDGETS } as Budgets;
  for (const [key, value] of Object.entries(overrides)) {
    if (!Object.hasOwn(DEFAULT_BUDGETS, key))
      throw new IwiError(
        'EPISODE_SPEC_INVALID',
        `unknown budget ${quote(key)} (known: ${Object.keys(DEFAULT_BUDGETS).join(', ')})`,
      );
    if (!Number.isSafeInteger(value) || (value as number) < 0)
      throw new IwiError('EPISODE_SPEC_INVALID', `budget ${key} must be a non-negative integer, got ${quote(value)}`);
    budgets[key as BudgetKind] = value as number;
  }
  return budgets;
}

/** What one tool call may spend. `forwardTokens` is the reservation (prompt + max_new_tokens per evaluation). */
export type Charge = {
  tool: 'read_weights' | 'write_weights' | 'run_target' | 'inspect_target';
  forwardTokens?: number;
  sequences?: number;
  evaluations?: number;
  layers?: number;
  positions?: number; // the largest per-sequence position count of the call
  maxNewTokens?: number;
};

/**
 * One episode's budgets. A call is checked in full (`check`) before any work, and charged (`charge`) only when it
 * succeeded, with the forward tokens actually evaluated: the reservation is refunded. The service runs check, work
 * and charge inside one job of its execution queue, so no other call of the episode can slip in between.
 */
export class BudgetLedger {
  constructor(
    readonly limits: Budgets,
    readonly use: BudgetUse = { ...EMPTY_USE },
  ) {}

  /** Count one editor turn. */
  turn(): void {
    this.require('turns', this.use.turns + 1);
    this.use.turns++;
  }

  /** Throws BudgetExceededError, naming the budget and what is left, when the call does not fit. */
  check(charge: Charge): void {
    const { use } = this;
    this.require('tool_calls', use.tool_calls + 1);
    if (charge.tool === 'run_target') {
      this.require('run_target_calls', use.run_target_calls + 1);
      this.requirePerCall('run_target_sequences_per_call', charge.sequences ?? 0);
      this.requirePerCall('run_target_max_new_tokens', charge.maxNewTokens ?? 0);
      this.require('run_target_sequence_evaluations', use.run_target_sequence_evaluations + (charge.evaluations ?? 0));
    }
    if (charge.tool === 'inspect_target') {
      this.require('inspect_target_calls', use.inspect_target_calls + 1);
      this.requirePerCall('inspect_target_sequences_per_call', charge.sequences ?? 0);
      this.requirePerCall('inspect_target_layers', charge.layers ?? 0);
      this.requirePerCall('inspect_target_positions', charge.positions ?? 0);
      this.require(
        'inspect_target_sequence_evaluations',
        use.inspect_target_sequence_evaluations + (charge.evaluations ?? 0),
      );
    }
    this.require('forward_tokens', use.forward_tokens + (charge.forwardTokens ?? 0));
  }

  /** Charge an admitted call; `forwardTokensUsed` (≤ the reservation) replaces the reservation. */
  charge(charge: Charge, forwardTokensUsed = charge.forwardTokens ?? 0): void {
    if (forwardTokensUsed > (charge.forwardTokens ?? 0))
      throw new Error(`used ${forwardTokensUsed} forward tokens against a reservation of ${charge.forwardTokens ?? 0}`);
    const { use } = this;
    use.tool_calls++;
    use.forward_tokens += forwardTokensUsed;
    if (charge.tool === 'run_target') {
      use.run_target_calls++;
      use.run_target_sequence_evaluations += charge.evaluations ?? 0;
    }
    if (charge.tool === 'inspect_target') {
      use.inspect_target_calls++;
      use.inspect_target_sequence_evaluations += charge.evaluations ?? 0;
    }
  }

  /** Limits, use and what is left, as every tool result reports them. */
  state(): { limits: Budgets; used: BudgetUse; remaining: Record<keyof BudgetUse, number> } {
    const { limits, use } = this;
    const remaining = Object.fromEntries(
      Object.keys(use).map((k) => [k, limits[k as keyof BudgetUse] - use[k as keyof BudgetUse]]),
    ) as Record<keyof BudgetUse, number>;
    return { limits: { ...limits }, used: { ...use }, remaining };
  }

  private require(kind: keyof BudgetUse, total: number): void {
    const limit = this.limits[kind];
    if (total > limit) throw new BudgetExceededError(kind, total - this.use[kind], limit, limit - this.use[kind]);
  }

  private requirePerCall(kind: BudgetKind, value: number): void {
    if (value > this.limits[kind])
      throw new BudgetExceededError(kind, value, this.limits[kind], this.limits[kind], 'per call');
  }
}

/** A refused call: which budget, what the call needs, the limit and what is left (inspect_ai's LimitExceededError). */
export class BudgetExceededError extends IwiError {
  constructor(
    readonly kind: BudgetKind,
    readonly value: number,
    readonly limit: number,
    readonly remaining: number,
    readonly scope: 'per call' | 'per episode' = 'per episode',
  ) {
    super(
      'BUDGET_EXHAUSTED',
      `budget ${kind} exceeded: this call needs ${value} against a ${scope} limit of ${limit} (${remaining} left); nothing was charged`,
    );
    this.name = 'BudgetExceededError';
  }

  /** The reply names the budget as data, so a harness can tell a per-call limit (retry smaller) from exhaustion. */
  override details() {
    const { kind, scope, value, limit, remaining } = this;
    return { budget_exceeded: { kind, scope, value, limit, remaining } };
  }
}
