import { defineConfig } from 'vitest/config';

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
  },
});
