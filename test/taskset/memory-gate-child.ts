// A runner process of the memory-gate tests: node --import tsx memory-gate-child.ts GATE_DIR AVAILABLE_BYTES
// It says "ready" once it reads commands from stdin, one a line, and reports on stdout, one line each:
//   reserve NAME BYTES    -> "reserved NAME" once granted (the gate's own "waiting" line goes to stderr)
//   spawn NAME BYTES      -> reserves for a real child process it spawns (a node that idles): "spawned NAME PID"
//   release NAME          -> "released NAME"
//   many PREFIX N BYTES   -> reserves PREFIX0…PREFIX(N-1) and releases the odd ones: "many PREFIX"
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { reserveMemory } from '../../taskset/memory-gate.ts';

const [dir, availableText] = process.argv.slice(2);
const options = { dir, available: () => Number(availableText), pollMs: 10 };
const releases = new Map<string, () => void>();
const say = (line: string) => process.stdout.write(`${line}\n`);

async function run(command: string, args: string[]): Promise<void> {
  if (command === 'reserve') {
    releases.set(args[0], await reserveMemory(Number(args[1]), () => undefined, args[0], options));
    say(`reserved ${args[0]}`);
  } else if (command === 'spawn') {
    let child: ChildProcess | undefined;
    releases.set(args[0], await reserveMemory(Number(args[1]), () => child?.pid, args[0], options));
    child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    say(`spawned ${args[0]} ${child.pid}`);
  } else if (command === 'release') {
    releases.get(args[0])!();
    say(`released ${args[0]}`);
  } else if (command === 'many') {
    for (let i = 0; i < Number(args[1]); i++) {
      const release = await reserveMemory(Number(args[2]), () => undefined, `${args[0]}${i}`, options);
      if (i % 2 === 1) release();
    }
    say(`many ${args[0]}`);
  } else {
    throw new Error(`unknown command ${command}`);
  }
}

// Commands run one after another, as they come.
let queue = Promise.resolve();
createInterface({ input: process.stdin }).on('line', (line) => {
  const [command, ...args] = line.trim().split(/\s+/);
  queue = queue.then(() => run(command, args));
});
say('ready');
