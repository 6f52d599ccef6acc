// The error table: stable codes with HTTP statuses, fastify's reply shape, and every code the service's source
// throws (and the engine's) is in the table (and the other way round: no dead rows).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, IwiError, isIwiError, type ErrorCode } from '../../core/errors.ts';
import { HTTP_STATUS, errorReply } from '../../service/errors.ts';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    return statSync(file).isDirectory() ? sources(file) : file.endsWith('.ts') ? [file] : [];
  });
}

describe('service/errors', () => {
  it('has UPPER_SNAKE codes with a 4xx/5xx status and a meaning', () => {
    expect(Object.keys(HTTP_STATUS)).toEqual(Object.keys(ERROR_CODES));
    for (const [code, meaning] of Object.entries(ERROR_CODES)) {
      const status = HTTP_STATUS[code as ErrorCode];
      expect(code).toMatch(/^[A-Z][A-Z0-9_]+$/);
      expect(status >= 400 && status < 600, code).toBe(true);
      expect(meaning.length).toBeGreaterThan(10);
    }
  });

  it('renders {statusCode, code, error, message}', () => {
    const error = new IwiError('WEIGHT_NOT_FOUND', 'no tensor named "x"');
    expect(errorReply(error)).toEqual({
      statusCode: 404,
      code: 'WEIGHT_NOT_FOUND',
      error: 'Not Found',
      message: 'no tensor named "x"',
    });
    expect(errorReply(new IwiError('HANDLE_LIMIT', 'm')).error).toBe('Too Many Requests');
    expect(isIwiError(error, 'WEIGHT_NOT_FOUND')).toBe(true);
    expect(isIwiError(error, 'SHAPE_MISMATCH')).toBe(false);
    expect(isIwiError(new Error('x'))).toBe(false);
  });

  it('has a row for every code thrown under service/ and engine/, and no row that neither names', () => {
    const thrown = new Set<string>();
    let text = '';
    const files = ['service', 'engine'].flatMap((dir) => sources(path.resolve(import.meta.dirname, '../..', dir)));
    for (const file of files) {
      if (file.endsWith(path.join('service', 'errors.ts'))) continue;
      const source = readFileSync(file, 'utf8');
      text += source;
      for (const match of source.matchAll(/new IwiError\(\s*'([A-Z_0-9]+)'/g)) thrown.add(match[1]!);
    }
    const table = Object.keys(ERROR_CODES) as ErrorCode[];
    expect([...thrown].filter((c) => !table.includes(c as ErrorCode))).toEqual([]);
    expect(table.filter((c) => !text.includes(`'${c}'`))).toEqual([]);
  });
});
