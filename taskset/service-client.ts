// The taskset's only way to the target: the service's HTTP API. Admin calls (episodes) and editor calls (brief,
// turns, tools, submit) are split so that an editor handle can never reach another episode or a grading input.
import type {
  BudgetState,
  EpisodeBrief,
  EpisodeCreate,
  EpisodeCreated,
  EpisodeSummary,
  ErrorReply,
  LeaseReply,
  SubmitReply,
  ToolReply,
} from '../service/api/index.ts';

// The wire types, as the taskset's callers of this client name them: one definition each, in service/api.
export type { BudgetState, EpisodeBrief, EpisodeCreate, EpisodeSummary, ErrorReply, SubmitReply, ToolReply };

/** Where a service listens and the two tokens that reach it (a `--service-env` file, the environment, or a child). */
export type ServiceEnv = { url: string; adminToken: string; editorToken: string };

export class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorReply,
  ) {
    super(`${body.code ?? status}: ${body.message ?? JSON.stringify(body)}`);
    this.name = 'ServiceError';
  }

  /** A call refused because an episode budget is spent (the episode should end and submit); a per-call limit is not. */
  get isBudget(): boolean {
    return this.body.code === 'BUDGET_EXHAUSTED' && this.body.budget_exceeded?.scope !== 'per call';
  }

  /** The budget that refused the call (per call or per episode), if a budget did. */
  get refusedBudget(): string | undefined {
    return this.body.code === 'BUDGET_EXHAUSTED' ? (this.body.budget_exceeded?.kind ?? 'unknown') : undefined;
  }
}

async function request<T>(url: string, method: string, headers: Record<string, string>, body?: unknown): Promise<T> {
  const response = await fetch(url, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : {};
  if (!response.ok) throw new ServiceError(response.status, parsed as ErrorReply);
  return parsed as T;
}

/** Admin side: create, inspect and delete episodes; see the whole service. */
export class AdminClient {
  constructor(
    readonly baseUrl: string,
    private readonly token: string,
  ) {}

  private get headers() {
    return { authorization: `Bearer ${this.token}` };
  }

  health(): Promise<{ status: string; model: string; revision: string; device?: string; precision?: string }> {
    return request(`${this.baseUrl}/health`, 'GET', {});
  }

  async createEpisode(spec: EpisodeCreate, editorToken: string): Promise<EditorClient> {
    const created = await request<EpisodeCreated>(`${this.baseUrl}/episodes`, 'POST', this.headers, spec);
    return new EditorClient(this.baseUrl, editorToken, created.id, created.episode_key);
  }

  episode(id: string): Promise<EpisodeSummary> {
    return request(`${this.baseUrl}/episodes/${id}`, 'GET', this.headers);
  }

  /** Another whole lease for an episode created with lease_seconds (POST /episodes/:id/lease). */
  renewEpisode(id: string): Promise<LeaseReply> {
    return request(`${this.baseUrl}/episodes/${id}/lease`, 'POST', this.headers);
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

  brief(): Promise<EpisodeBrief> {
    return request(this.route('/brief'), 'GET', this.headers);
  }

  /** Count one editor turn; throws a budget ServiceError when turns are exhausted. */
  turn(): Promise<{ budget: BudgetState }> {
    return request(this.route('/turn'), 'POST', this.headers);
  }

  /** Call a tool; tool errors throw ServiceError (the harness returns them to the editor as tool results). */
  tool(name: string, args: unknown): Promise<ToolReply> {
    return request(this.route(`/tools/${encodeURIComponent(name)}`), 'POST', this.headers, args);
  }

  submit(): Promise<SubmitReply> {
    return request(this.route('/submit'), 'POST', this.headers);
  }
}
