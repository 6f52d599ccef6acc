// The taskset's only way to the target: the service's HTTP API. Admin calls (episodes) and editor calls (brief,
// turns, tools, submit) are split so that an editor handle can never reach another episode or a grading input.
import type { ToolDefinition } from '../service/tools/schemas.ts';

export type ServiceErrorBody = {
  statusCode: number;
  code: string;
  error: string;
  message: string;
  budget?: unknown;
  budget_exceeded?: { kind: string; scope: 'per call' | 'per episode'; value: number; limit: number; remaining: number };
};

/** Where `npx iwibench service` listens unless told otherwise, and where clients look unless IWIBENCH_SERVICE_URL says. */
export const DEFAULT_SERVICE_URL = 'http://127.0.0.1:8768';

export class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly body: ServiceErrorBody,
  ) {
    super(`${body.code ?? status}: ${body.message ?? JSON.stringify(body)}`);
    this.name = 'ServiceError';
  }

  /** A call refused because an episode budget is spent (the episode should end and submit); a per-call limit is not. */
  get isBudget(): boolean {
    return this.body.code === 'BUDGET_EXHAUSTED' && this.body.budget_exceeded?.scope !== 'per call';
  }
}

/** The episode spec the service accepts: what the editor may see, plus budgets. */
export type ServiceEpisodeSpec = {
  family: string;
  seed: number;
  objective: string | { text: string; structured?: unknown };
  relevant_token_ids: number[];
  practice: { messages: { role: 'system' | 'user' | 'assistant'; content: string }[]; response: string; note?: string }[];
  budgets?: Record<string, number>;
  label?: string;
};

export type Brief = {
  episode_id: string;
  family: string;
  seed: number;
  objective: ServiceEpisodeSpec['objective'];
  target: { model: string; revision: string; layers: number; hidden_size: number; layer_types: string[]; chat_template: string };
  manifest: string[];
  relevant_tokens: { id: number; token: string | null }[];
  practice: ServiceEpisodeSpec['practice'];
  budget: BudgetState;
  limits: Record<string, number>;
  tools: ToolDefinition[];
};

export type BudgetState = { limits: Record<string, number>; used: Record<string, number>; remaining: Record<string, number> };
export type SubmitResult = { id: string; status: string; patch: { dir: string; sha256: string; changed_parameters: number; ops: number }; model: string; budget: BudgetState };
export type EpisodeSummary = { id: string; family: string; seed: number; status: string; op_count: number; touched_tensors: string[]; budget: BudgetState; patch: SubmitResult['patch'] | null };

async function request<T>(url: string, method: string, headers: Record<string, string>, body?: unknown): Promise<T> {
  const response = await fetch(url, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : {};
  if (!response.ok) throw new ServiceError(response.status, parsed as ServiceErrorBody);
  return parsed as T;
}

/** Admin side: create, inspect and delete episodes; see the whole service. */
export class AdminClient {
  constructor(
    readonly baseUrl: string,
    private readonly token: string,
  ) {}

  static fromEnv(env: NodeJS.ProcessEnv = process.env): AdminClient {
    const url = env.IWIBENCH_SERVICE_URL || DEFAULT_SERVICE_URL;
    if (!env.IWIBENCH_ADMIN_TOKEN) throw new Error('IWIBENCH_ADMIN_TOKEN is not set');
    return new AdminClient(url, env.IWIBENCH_ADMIN_TOKEN);
  }

  private get headers() {
    return { authorization: `Bearer ${this.token}` };
  }

  health(): Promise<{ status: string; model: string; revision: string }> {
    return request(`${this.baseUrl}/health`, 'GET', {});
  }

  async createEpisode(spec: ServiceEpisodeSpec, editorToken: string): Promise<EditorClient> {
    const created = await request<{ id: string; episode_key: string }>(`${this.baseUrl}/episodes`, 'POST', this.headers, spec);
    return new EditorClient(this.baseUrl, editorToken, created.id, created.episode_key);
  }

  episode(id: string): Promise<EpisodeSummary> {
    return request(`${this.baseUrl}/episodes/${id}`, 'GET', this.headers);
  }

  deleteEpisode(id: string): Promise<unknown> {
    return request(`${this.baseUrl}/episodes/${id}`, 'DELETE', this.headers);
  }
}

/** Editor side: one episode's brief, turns, tools and submit. */
export class EditorClient {
  constructor(
    readonly baseUrl: string,
    private readonly token: string,
    readonly episodeId: string,
    private readonly episodeKey: string,
  ) {}

  private get headers() {
    return { authorization: `Bearer ${this.token}`, 'x-episode-key': this.episodeKey };
  }

  private route(path: string): string {
    return `${this.baseUrl}/episodes/${this.episodeId}${path}`;
  }

  brief(): Promise<Brief> {
    return request(this.route('/brief'), 'GET', this.headers);
  }

  /** Count one editor turn; throws a budget ServiceError when turns are exhausted. */
  turn(): Promise<{ budget: BudgetState }> {
    return request(this.route('/turn'), 'POST', this.headers);
  }

  /** Call a tool; tool errors throw ServiceError (the harness returns them to the editor as tool results). */
  tool(name: string, args: unknown): Promise<{ tool: string; result: unknown; budget: BudgetState }> {
    return request(this.route(`/tools/${encodeURIComponent(name)}`), 'POST', this.headers, args);
  }

  submit(): Promise<SubmitResult> {
    return request(this.route('/submit'), 'POST', this.headers);
  }
}
