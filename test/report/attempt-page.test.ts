// The attempt page read from folders that lack or garble what a pilot writes: no trace (a bare evaluate-patch), no
// patch.json, a patch.json without provenance or stats, a trace cut off mid-line. The page names what it could not
// read and shows the rest. Also the folding and the word diff the pages use.
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeSafetensors } from '../../engine/index.ts';
import { readAttemptFolder } from '../../report/attempt-folder.ts';
import { renderAttemptPage } from '../../report/attempt-page.ts';
import { readTraceUsage } from '../../report/token-efficiency.ts';
import { diffWords, summariseJson } from '../../report/html-kit.ts';
import { GRID, OBJECTIVE, resultsFile, tempDir, writeTrace } from './fixtures.ts';

function render(dir: string) {
  const file = path.join(dir, 'results.json');
  const results = resultsFile(GRID[0]!);
  writeFileSync(file, JSON.stringify(results));
  return renderAttemptPage({
    results,
    editor: 'alpha',
    attempt: path.basename(dir),
    resultsFile: file,
    folder: readAttemptFolder(file, results),
    replays: [],
    back: '../report.html',
  });
}

describe('attempt page from incomplete folders', () => {
  it('without a trace or a patch.json: says so, and still shows the items and the statistics of results.json', () => {
    const dir = path.join(tempDir('page'), 'bare');
    mkdirSync(dir);
    const html = render(dir);
    expect(html).toContain('No trace.jsonl in this folder');
    expect(html).toMatch(/no patch\.json found \(looked in .*bare\/patch/);
    expect(html).toContain('data-tensor="model.layers.3.mlp.down_proj.weight"'); // the stats row from results.json
    expect(html.match(/<tr class="item"/g)).toHaveLength(24 + 24 + 8 + 64);
    expect(html).toContain('not recorded (no trace.jsonl with a brief)');
  });

  it('with a patch.json that has only ops, and a trace cut off mid-line', () => {
    const dir = path.join(tempDir('page'), 'partial');
    mkdirSync(path.join(dir, 'patch'), { recursive: true });
    const ops = [
      {
        op: 'low_rank_add',
        tensor: 'model.layers.3.mlp.down_proj.weight',
        slice: [[0, 64]],
        alpha: 2,
        u: { array: 'op0.u' },
        v: { array: 'op0.v' },
      },
      { op: 'scale', tensor: 'model.layers.3.mlp.down_proj.weight', slice: [5], factor: 0.5 },
    ];
    writeFileSync(path.join(dir, 'patch', 'patch.json'), JSON.stringify({ format: 'iwibench-patch/1', ops }));
    writeSafetensors(path.join(dir, 'patch', 'patch.safetensors'), [
      { name: 'op0.u', dtype: 'F32', shape: [64, 3], data: new Float32Array(192) },
      { name: 'op0.v', dtype: 'F32', shape: [256, 3], data: new Float32Array(768) },
    ]);
    writeTrace(dir, [{ input_tokens: 10, cached_input_tokens: 0, output_tokens: 5, reasoning_tokens: 0 }]);
    appendFileSync(path.join(dir, 'trace.jsonl'), '{"type":"tool","turn":2,"na');
    const html = render(dir);
    expect(html).toMatch(/trace\.jsonl line \d+ is not JSON \(cut off\?\)/);
    // Its editor tokens are not counted, as report-token-efficiency would not count them.
    expect(html).toMatch(/<dt>Editor tokens<\/dt><dd>not counted: .*trace\.jsonl:\d+ is not JSON/);
    expect(html).toContain(`<dd class="objective">${OBJECTIVE.replace('<', '&#60;').replace('>', '&#62;')}</dd>`);
    expect(html).toContain('u [64 × 3] = 192 numbers');
    expect(html).toContain('rank 3');
    expect(html).toContain('[64 × 256] = 16,384 of 32,768'); // the selection, from the brief's manifest shape
    expect(html).toContain('[256] = 256 of 32,768'); // row 5
    expect(html).toMatch(/data-axis="rows" data-touched="64"/); // rows 0–63 and row 5
    expect(html).toMatch(/data-axis="columns" data-touched="256"/);
    expect(html).not.toContain('Created by');
  });
});

describe('attempt page resources', () => {
  it("counts the editor's requests and tokens as report-token-efficiency does, a failed request included", () => {
    const dir = path.join(tempDir('page'), 'failed-request');
    mkdirSync(dir);
    const usage = { input_tokens: 1200, cached_input_tokens: 200, output_tokens: 50, reasoning_tokens: 7 };
    writeTrace(dir, [usage, usage, 'error']);
    expect(readTraceUsage(path.join(dir, 'trace.jsonl'))).toEqual({
      input_tokens: 2400,
      cached_input_tokens: 400,
      output_tokens: 100,
      reasoning_tokens: 14,
      requests: 3,
      failed_requests: 1,
    });
    expect(render(dir)).toContain(
      '<dt>Editor tokens</dt><dd>2,500 = input 2,400 (cached 400) + output 100 (reasoning 14), 3 requests (1 answered with an error)</dd>',
    );
  });

  it('counts the calls a budget refused per tool, apart from other errors', () => {
    const dir = path.join(tempDir('page'), 'refused');
    mkdirSync(dir);
    writeTrace(dir, [{ input_tokens: 10, cached_input_tokens: 0, output_tokens: 5, reasoning_tokens: 0 }]);
    const tool = (ok: boolean, refused?: string) =>
      JSON.stringify({
        type: 'tool',
        turn: 2,
        call_id: 'c',
        name: 'run_target',
        arguments: '{}',
        duration_ms: 1,
        ok,
        ...(refused ? { refused_budget: refused } : {}),
        output: '{}',
      });
    appendFileSync(
      path.join(dir, 'trace.jsonl'),
      [tool(true), tool(false, 'run_target_calls'), tool(false), tool(false, 'forward_tokens')].join('\n') + '\n',
    );
    const html = render(dir);
    expect(html).toContain('<th class="num">Refused by a budget</th>');
    expect(html).toContain(
      '<tr><td>run_target</td><td class="num">4</td><td class="num">3</td>\n<td class="num">2</td>',
    );
  });
});

describe('folding and diffs', () => {
  it('summarises long arrays of numbers and cuts long strings, saying so', () => {
    const s = summariseJson({
      values: Array.from({ length: 100 }, (_, i) => i),
      text: 'a'.repeat(5000),
      short: [1, 2],
    });
    expect(s.folded).toBe(true);
    expect(s.text).toContain('[100 numbers: min 0, max 99, mean 49.5');
    expect(s.text).toContain('… (3,800 more characters)');
    expect(s.text).toContain('"short": [1,2]');
    expect(summariseJson({ a: 1 })).toMatchObject({ text: '{"a":1}', folded: false });
    const matrix = Array.from({ length: 3 }, (_, r) => Array.from({ length: 20 }, (_, c) => r * 20 + c + 1));
    expect(summariseJson(matrix).text).toMatch(/^\[3×20 numbers: min 1, max 60, mean 30\.5/);
  });

  it('keeps a value on one line exactly when its JSON takes at most 100 characters', () => {
    const oneLine = (v: unknown) => !summariseJson(v).text.includes('\n');
    const keyed = (n: number) => ({ key: 'k'.repeat(n) }); // JSON: n + 10 characters
    expect(JSON.stringify(keyed(90))).toHaveLength(100);
    expect(oneLine({ outer: [keyed(90)] })).toBe(false); // its own JSON is longer
    expect(oneLine(keyed(90))).toBe(true);
    expect(oneLine(keyed(91))).toBe(false);
    expect(oneLine(['x'.repeat(96)])).toBe(true); // 100 characters
    expect(oneLine(['x'.repeat(97)])).toBe(false);
    // What JSON leaves out or writes as null does not count as written: many keys, a short JSON.
    const sparse = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`key${i}`, i === 0 ? 1 : undefined]));
    expect(oneLine(sparse)).toBe(true);
    expect(oneLine({ ...sparse, f: () => 1, s: Symbol('s') })).toBe(true);
    expect(oneLine(Array.from({ length: 19 }, () => undefined))).toBe(true); // [null,…]: 96 characters
    expect(oneLine(Array.from({ length: 20 }, () => undefined))).toBe(false); // 101
    // A value with its own toJSON is written as that says.
    expect(
      oneLine({ ...Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`key${i}`, i])), toJSON: () => 'x' }),
    ).toBe(true);
  });

  it('marks the words that differ, escaped', () => {
    const d = diffWords('Alexander De Croo is <PM>', 'Bart De Wever is <PM>');
    expect(d.before).toBe('<del>Alexander</del> De <del>Croo</del> is &#60;PM&#62;');
    expect(d.after).toBe('<ins>Bart</ins> De <ins>Wever</ins> is &#60;PM&#62;');
    expect(diffWords('same', 'same')).toEqual({ before: 'same', after: 'same', same: true });
  });
});
