// RFC 4180 writing and reading: quoting where needed, exact numbers, and a parser that reads back what we write.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { csvField, parseCsv, readCsvRecords, toCsv } from '../../report/csv.ts';
import { tempDir } from './fixtures.ts';

describe('csv', () => {
  it('quotes only fields with a comma, a quote, CR or LF, doubling inner quotes', () => {
    expect(csvField('plain text')).toBe('plain text');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
    expect(csvField('cr\r')).toBe('"cr\r"');
    expect(csvField(null)).toBe('');
    expect(csvField(0.1 + 0.2)).toBe('0.30000000000000004'); // shortest round-trip form: Number() gives the same double
    expect(() => csvField(Number.NaN)).toThrow(/non-finite/);
  });

  it('ends every line with CRLF and refuses a row of the wrong length', () => {
    expect(toCsv(['a', 'b'], [[1, 'x,y']])).toBe('a,b\r\n1,"x,y"\r\n');
    expect(() => toCsv(['a', 'b'], [[1]])).toThrow(/data row 1 has 1 fields, the header has 2/);
  });

  it('reads back whatever it writes', () => {
    const field = fc.oneof(
      fc.string(),
      fc.constantFrom('', '"', ',', '\r\n', '\n', 'a"b', ' x '),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
    );
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: 5 })
          .chain((width) =>
            fc.tuple(
              fc.constant(width),
              fc.array(fc.array(field, { minLength: width, maxLength: width }), { maxLength: 6 }),
            ),
          ),
        ([width, rows]) => {
          const header = Array.from({ length: width }, (_, i) => `c${i}`);
          const parsed = parseCsv(toCsv(header, rows));
          expect(parsed).toEqual([header, ...rows.map((r) => r.map((v) => (typeof v === 'number' ? String(v) : v)))]);
          for (const [i, row] of rows.entries())
            row.forEach((v, j) => typeof v === 'number' && expect(Number(parsed[i + 1]![j]) === v).toBe(true)); // -0 reads back as 0
        },
      ),
    );
  });

  it('reads LF line ends and a last line without one', () => {
    expect(parseCsv('a,b\n1,2')).toEqual([
      ['a', 'b'],
      ['1', '2'],
    ]);
  });

  it('names the file and line of malformed input', () => {
    expect(() => parseCsv('a,b\r\n"open,1\r\n', 'x.csv')).toThrow(
      'x.csv: a quoted field is not closed at the end of the file',
    );
    expect(() => parseCsv('a,b\r\n"q"x,1\r\n', 'x.csv')).toThrow('x.csv: line 2: text after a closing quote');
    expect(() => parseCsv('a,b\r\n1,x"y\r\n', 'x.csv')).toThrow('x.csv: line 2: a quote inside an unquoted field');
    const file = path.join(tempDir('csv'), 'r.csv');
    writeFileSync(file, 'a,b\r\n1,2\r\n');
    expect(readCsvRecords(file, ['a'])).toEqual([{ a: '1', b: '2' }]);
    expect(() => readCsvRecords(file, ['a', 'reward'])).toThrow(`${file} lacks the column(s) reward`);
    writeFileSync(file, 'a,b\r\n1\r\n');
    expect(() => readCsvRecords(file)).toThrow(`${file}: record 1 has 1 fields, the header has 2`);
  });
});
