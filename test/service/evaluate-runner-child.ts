// A runner for evaluate.test.ts: starts one long evaluation process, prints its pid, and waits (to be killed).
import { evaluateInFreshProcess, type EvaluationItem } from '../../service/evaluate.ts';

const [modelDir, outFile] = process.argv.slice(2);
const items: EvaluationItem[] = Array.from({ length: 400 }, (_, i) => ({ id: `q${i}`, messages: [{ role: 'user', content: `Count to ${i}.` }], max_new_tokens: 128 }));
await evaluateInFreshProcess({ location: { modelDir: modelDir! }, items, patch: null }, outFile!, { onStart: (child) => process.stdout.write(`${child.pid}\n`) });
