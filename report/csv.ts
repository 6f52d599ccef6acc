// CSV as RFC 4180 has it: comma-separated, CRLF line ends, a field quoted when it holds a comma, a double quote,
// CR or LF, with inner quotes doubled. Numbers are written with JavaScript's shortest round-trip form, so a value
// read back with Number() is the same double; null and undefined are empty fields.
import { readFileSync } from 'node:fs';

export type Cell = string | number | boolean | null | undefined;

export function csvField(value: Cell): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' && !Number.isFinite(value))
    throw new Error(`CSV: refusing to write the non-finite number ${value}`);
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** Header plus one line per row; every row must have the header's length. */
export function toCsv(header: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const lines = [header, ...rows].map((row, i) => {
    if (row.length !== header.length)
      throw new Error(`CSV: data row ${i} has ${row.length} fields, the header has ${header.length}`);
    return row.map(csvField).join(',');
  });
  return lines.join('\r\n') + '\r\n';
}

/** Objects to CSV, columns in the given order. */
export function recordsToCsv<T extends Record<string, Cell>>(
  columns: readonly (keyof T & string)[],
  records: readonly T[],
): string {
  return toCsv(
    columns,
    records.map((r) => columns.map((c) => r[c])),
  );
}

/** Parses RFC 4180 text (CRLF or LF line ends); `where` names the source in errors. */
export function parseCsv(text: string, where = 'CSV'): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let line = 1;
  let i = 0;
  const endField = () => {
    row.push(field);
    field = '';
  };
  const endRow = () => {
    endField();
    rows.push(row);
    row = [];
    line++;
  };
  while (i < text.length) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i += 2;
        continue;
      }
      if (c === '"') {
        quoted = false;
        i++;
        const next = text[i];
        if (next !== undefined && next !== ',' && next !== '\r' && next !== '\n')
          throw new Error(`${where}: line ${line}: text after a closing quote`);
        continue;
      }
      if (c === '\n') line++;
      field += c;
      i++;
      continue;
    }
    if (c === '"') {
      if (field !== '') throw new Error(`${where}: line ${line}: a quote inside an unquoted field`);
      quoted = true;
    } else if (c === ',') endField();
    else if (c === '\r' && text[i + 1] === '\n') {
      endRow();
      i++;
    } else if (c === '\n') endRow();
    else field += c;
    i++;
  }
  if (quoted) throw new Error(`${where}: a quoted field is not closed at the end of the file`);
  if (field !== '' || row.length > 0) endRow(); // last line without a line end
  return rows;
}

/** Reads a CSV file into records keyed by its header; insists on the `required` columns. */
export function readCsvRecords(file: string, required: readonly string[] = []): Record<string, string>[] {
  const [header, ...rows] = parseCsv(readFileSync(file, 'utf8'), file);
  if (!header) throw new Error(`${file} is empty: expected a CSV header`);
  const missing = required.filter((c) => !header.includes(c));
  if (missing.length > 0) throw new Error(`${file} lacks the column(s) ${missing.join(', ')}`);
  return rows.map((fields, i) => {
    if (fields.length !== header.length)
      throw new Error(`${file}: record ${i + 1} has ${fields.length} fields, the header has ${header.length}`);
    return Object.fromEntries(header.map((name, j) => [name, fields[j]!]));
  });
}
