// The layers, checked from the import lines of the sources (type-only imports and re-exports count): core/ is the
// kernel every layer may import and imports none of them; the engine (engine/) needs only itself and core/, and every
// other part reaches it through engine/index.ts; the wire contract (service/api/) is data over core/ and the engine;
// the weight store (service/weights/) takes its op grammar and limits from that contract but never sees the service's
// HTTP side, and is reached through its index.ts; the taskset (taskset/) and the MMLU-Pro runner (mmlu-pro/) are
// reached through their index.ts too; the report (report/) reads result folders and only commands import it; and no
// module imports itself round a circle. Tests (test/) are not sources here: they may reach inside a part.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SOURCE_DIRS = [
  'core',
  'engine',
  'service',
  'taskset',
  'report',
  'toy',
  'mmlu-pro',
  'editor-proxy',
  'scripts',
  'bin',
];

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(file);
    return /\.(ts|mts|mjs|js)$/.test(name) && !name.endsWith('.d.ts') ? [file] : [];
  });
}

/** Module specifiers a file imports, re-exports or loads with import(), through the compiler's own scanner. */
function specifiers(file: string): string[] {
  return ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map((f) => f.fileName);
}

/** Repository-relative path of a relative import, or the bare specifier (`node:fs`, `fastify`). */
function target(from: string, specifier: string): string {
  return specifier.startsWith('.') ? path.relative(ROOT, path.resolve(path.dirname(from), specifier)) : specifier;
}

const graph = new Map<string, string[]>();
for (const dir of SOURCE_DIRS) {
  for (const file of sourceFiles(path.join(ROOT, dir)))
    graph.set(
      path.relative(ROOT, file),
      specifiers(file).map((s) => target(file, s)),
    );
}

const isNodeBuiltin = (specifier: string) => specifier.startsWith('node:') || builtinModules.includes(specifier);
const isLocal = (specifier: string) =>
  graph.has(specifier) || (specifier.includes(path.sep) && existsSync(path.join(ROOT, specifier)));
const under = (file: string, dir: string) => file.startsWith(dir + path.sep);

/** `file → import` for every import of a file under `dir` that `allowed` refuses. */
function violations(dir: string, allowed: (imported: string) => boolean): string[] {
  return [...graph]
    .filter(([file]) => under(file, dir))
    .flatMap(([file, imports]) => imports.filter((i) => !allowed(i)).map((i) => `${file} → ${i}`));
}

/** Every cycle of local imports, each listed once from its smallest file (Tarjan's strongly connected components). */
function cycles(): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || (graph.get(file) ?? []).includes(file)) components.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return components;
}

describe('layers', () => {
  it('reads the import lines of the tree (the check sees what it checks)', () => {
    expect(graph.get(path.join('service', 'weights', 'store.ts'))).toContain(
      path.join('service', 'weights', 'reads.ts'),
    );
    expect(graph.get(path.join('engine', 'npy.ts'))).toContain(path.join('core', 'files.ts'));
    expect(graph.get(path.join('service', 'target.ts'))).toContain(path.join('engine', 'index.ts'));
    expect(graph.get(path.join('service', 'target.ts'))).toContain(path.join('service', 'weights', 'index.ts'));
    expect(graph.get(path.join('taskset', 'harness', 'builtin-demo.ts'))).toContain(
      path.join('taskset', 'harness', 'builtin.ts'),
    ); // type-only
    expect([...graph.keys()].filter((f) => under(f, 'core')).length).toBeGreaterThanOrEqual(4);
  });

  it('core/ imports only core/ and Node built-ins', () => {
    expect(violations('core', (i) => isNodeBuiltin(i) || under(i, 'core'))).toEqual([]);
  });

  it('the engine (engine/) imports only engine/, core/ and packages', () => {
    expect(
      violations(
        path.join('service', 'model'),
        (i) => !isLocal(i) || under(i, path.join('service', 'model')) || under(i, 'core'),
      ),
    ).toEqual([]);
  });

  /** Imports of `dir`'s files from outside it that are not its face. */
  const pastTheFace = (dir: string, face: string) =>
    SOURCE_DIRS.flatMap((source) => violations(source, (i) => !under(i, dir) || i === face)).filter(
      (edge) => !under(edge.split(' → ')[0]!, dir),
    );

  it('every other part reaches the engine through its face, engine/index.ts', () => {
    expect(pastTheFace('engine', path.join('engine', 'index.ts'))).toEqual([]);
  });

  it('every other part reaches the weight store through its face, service/weights/index.ts', () => {
    const weights = path.join('service', 'weights');
    expect(pastTheFace(weights, path.join(weights, 'index.ts'))).toEqual([]);
  });

  it('every other part reaches the taskset through its face, taskset/index.ts', () => {
    expect(pastTheFace('taskset', path.join('taskset', 'index.ts'))).toEqual([]);
  });

  it('every other part reaches the MMLU-Pro runner through its face, mmlu-pro/index.ts', () => {
    expect(pastTheFace('mmlu-pro', path.join('mmlu-pro', 'index.ts'))).toEqual([]);
  });

  it('the wire contract (service/api/) imports only itself, the engine, core/ and packages', () => {
    const allowed = ['service/api', 'engine', 'core'].map((d) => d.split('/').join(path.sep));
    expect(violations(path.join('service', 'api'), (i) => !isLocal(i) || allowed.some((d) => under(i, d)))).toEqual([]);
  });

  it('the weight store (service/weights/) imports only itself, the contract, the engine, core/ and packages: no HTTP error table', () => {
    const allowed = ['service/weights', 'service/api', 'engine', 'core'].map((d) => d.split('/').join(path.sep));
    expect(violations(path.join('service', 'weights'), (i) => !isLocal(i) || allowed.some((d) => under(i, d)))).toEqual(
      [],
    );
  });

  it('the libraries (core/, engine/, service/, taskset/, report/) import no command (scripts/, bin/): the CLI sits on top', () => {
    const isCommand = (i: string) => under(i, 'scripts') || under(i, 'bin');
    expect(
      ['core', 'engine', 'service', 'taskset', 'report'].flatMap((dir) => violations(dir, (i) => !isCommand(i))),
    ).toEqual([]);
  });

  it('the report (report/) reads result folders: nothing below the CLI imports it', () => {
    expect(
      ['core', 'engine', 'service', 'taskset'].flatMap((dir) => violations(dir, (i) => !under(i, 'report'))),
    ).toEqual([]);
  });

  it('has no import cycles', () => {
    expect(cycles()).toEqual([]);
  });
});
