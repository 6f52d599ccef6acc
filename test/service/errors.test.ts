// The error table: stable codes with HTTP statuses, fastify's reply shape, and every code the service's source
// throws is in the table (and the other way round: no dead rows).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERRORS, IwiError, isIwiError, type ErrorCode } from '../../service/errors.ts';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    return statSync(file).isDirectory() ? sources(file) : file.endsWith('.ts') ? [file] : [];
  });
}

describe('service/errors', () => {
  it('has UPPER_SNAKE codes with a 4xx/5xx status and a meaning', () => {
    for (const [code, row] of Object.entries(ERRORS)) {
      expect(code).toMatch(/^[A-Z][A-Z0-9_]+$/);
      expect(row.status >= 400 && row.status < 600, code).toBe(true);
      expect(row.meaning.length).toBeGreaterThan(10);
    }
  });

  it('renders {statusCode, code, error, message}', () => {
    const error = new IwiError('WEIGHT_NOT_FOUND', 'no tensor named "x"');
    expect(error.toReply()).toEqual({ statusCode: 404, code: 'WEIGHT_NOT_FOUND', error: 'Not Found', message: 'no tensor named "x"' });
    expect(new IwiError('HANDLE_LIMIT', 'm').toReply().error).toBe('Too Many Requests');
    expect(isIwiError(error, 'WEIGHT_NOT_FOUND')).toBe(true);
    expect(isIwiError(error, 'SHAPE_MISMATCH')).toBe(false);
    expect(isIwiError(new Error('x'))).toBe(false);
  });

  it('has a row for every code thrown under service/, and no row that service/ never names', () => {
    const thrown = new Set<string>();
    let text = '';
    for (const file of sources(path.resolve(import.meta.dirname, '../../service'))) {
      if (file.endsWith(path.join('service', 'errors.ts'))) continue;
      const source = readFileSync(file, 'utf8');
      text += source;
      for (const match of source.matchAll(/new IwiError\(\s*'([A-Z_0-9]+)'/g)) thrown.add(match[1]!);
    }
    const table = Object.keys(ERRORS) as ErrorCode[];
    expect([...thrown].filter((c) => !table.includes(c as ErrorCode))).toEqual([]);
    expect(table.filter((c) => !text.includes(`'${c}'`))).toEqual([]);
  });
});
