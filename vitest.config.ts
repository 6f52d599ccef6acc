import path from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The end-to-end files, longest first (1–4 minutes each on 2 cores). Without timings from an earlier run (a fresh
 * clone, CI) vitest orders files by size, which started the toy's end-to-end file last and left one worker running
 * it alone for its last ~100 s; started first, these run beside the many short files instead.
 */
const SLOW_FILES = [
  'test/taskset/pipeline.test.ts',
  'test/taskset/queue-e2e.test.ts',
  'test/toy/toy-benchmark.test.ts',
  'test/report/viewer.test.ts',
  'test/scripts/seed-commands.test.ts',
];

class SlowFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const index = SLOW_FILES.indexOf(path.relative(process.cwd(), file.moduleId).split(path.sep).join('/'));
      return index < 0 ? SLOW_FILES.length : index;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b)); // stable: the rest keep vitest's order
  }
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Makes the shared tiny checkpoints once (test/fixtures.ts).
    globalSetup: ['test/global-setup.ts'],
    // Model tests build ONNX sessions and spawn fresh processes: generous but bounded.
    testTimeout: 120_000,
    hookTimeout: 180_000,
    // Two cores: run files two at a time so model tests do not starve each other.
    maxWorkers: 2,
    // Files share each worker's modules, as a process shares them: a module (the engine, the taskset, ~700 files) is
    // loaded once per worker rather than once per file, and what a process builds once (a tokenizer: ~2.7 s) is
    // built once per worker. A file restores what it changes (process.env, the kernel path) and keeps its fixtures
    // in the run's temp folder, not in an afterAll of a shared module.
    isolate: false,
    sequence: { sequencer: SlowFilesFirst },
  },
});
