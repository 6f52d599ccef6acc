// Bearer-token roles. Both tokens must be set and differ, or the service refuses to start. Comparison is in constant
// time over SHA-256 digests (equal lengths whatever the input), so a wrong token leaks nothing about the right one.
import { createHash, timingSafeEqual } from 'node:crypto';
import { IwiError } from './errors.ts';

export type Role = 'admin' | 'editor';
export type Tokens = { admin: string; editor: string };

export function tokensFromEnv(env: NodeJS.ProcessEnv = process.env): Tokens {
  const admin = env.IWIBENCH_ADMIN_TOKEN;
  const editor = env.IWIBENCH_EDITOR_TOKEN;
  const problems: string[] = [];
  if (!admin) problems.push('IWIBENCH_ADMIN_TOKEN is not set');
  if (!editor) problems.push('IWIBENCH_EDITOR_TOKEN is not set');
  if (admin && editor && admin === editor) problems.push('IWIBENCH_ADMIN_TOKEN and IWIBENCH_EDITOR_TOKEN must differ');
  if (problems.length > 0) throw new Error(`refusing to start: ${problems.join('; ')}`);
  return { admin: admin!, editor: editor! };
}

const digest = (value: string) => createHash('sha256').update(value).digest();

export class Authenticator {
  private readonly admin: Buffer;
  private readonly editor: Buffer;

  constructor(tokens: Tokens) {
    if (!tokens.admin || !tokens.editor || tokens.admin === tokens.editor)
      throw new Error('admin and editor tokens must both be set and differ');
    this.admin = digest(tokens.admin);
    this.editor = digest(tokens.editor);
  }

  /** The role of an Authorization header; 401 when missing or wrong. */
  roleOf(header: string | undefined): Role {
    const match = /^Bearer (.+)$/.exec(header ?? '');
    if (!match) throw new IwiError('UNAUTHORIZED', 'missing bearer token (Authorization: Bearer …)');
    const presented = digest(match[1]!);
    // Both comparisons always run, so timing does not tell which role matched.
    const isAdmin = timingSafeEqual(presented, this.admin);
    const isEditor = timingSafeEqual(presented, this.editor);
    if (isAdmin) return 'admin';
    if (isEditor) return 'editor';
    throw new IwiError('UNAUTHORIZED', 'wrong bearer token');
  }

  /** 403 when the role may not use the route. */
  require(header: string | undefined, allowed: Role[]): Role {
    const role = this.roleOf(header);
    if (!allowed.includes(role))
      throw new IwiError('FORBIDDEN', `the ${role} token may not use this route (needs ${allowed.join(' or ')})`);
    return role;
  }
}
