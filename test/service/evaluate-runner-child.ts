// A runner for evaluate.test.ts: starts one long evaluation process (one item of 4,000 tokens, so no progress line
// is written for a long while), prints its pid, and waits to be killed.
import { evaluateInFreshProcess } from '../../service/evaluate.ts';

const [modelDir, outFile] = process.argv.slice(2);
const items = [
  { id: 'long', messages: [{ role: 'user' as const, content: 'Count to a thousand.' }], max_new_tokens: 4000 },
];
const job = { location: { modelDir: modelDir! }, items, patch: null };
await evaluateInFreshProcess(job, outFile!, { onStart: (child) => process.stdout.write(`${child.pid}\n`) });
