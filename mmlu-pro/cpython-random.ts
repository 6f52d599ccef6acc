// CPython's `random` module, only as far as the original script uses it: `random.seed(n)` for a non-negative int,
// then `random.randint(a, b)`. CPython seeds its Mersenne Twister (MT19937) with init_by_array over the 32-bit words
// of |n| (Modules/_randommodule.c random_seed), and randint(a, b) is randrange(a, b + 1) = a + _randbelow(b - a + 1),
// where _randbelow(n) draws getrandbits(n.bit_length()) until the value is below n (Lib/random.py). Checked
// against python3 in test/mmlu-pro/cpython-random.test.ts.

const N = 624;
const M = 397;

export class CPythonRandom {
  private readonly mt = new Uint32Array(N);
  private index = N + 1;

  /** `random.seed(seed)` for an integer seed 0 ≤ seed < 2^53. */
  constructor(seed: number) {
    if (!Number.isSafeInteger(seed) || seed < 0)
      throw new Error(`CPythonRandom: seed must be a non-negative safe integer, got ${seed}`);
    const key: number[] = [];
    for (let rest = seed; rest > 0; rest = Math.floor(rest / 2 ** 32)) key.push(rest % 2 ** 32);
    this.initByArray(key.length > 0 ? key : [0]);
  }

  /** `random.getrandbits(k)` for 1 ≤ k ≤ 32. */
  getrandbits(k: number): number {
    if (!Number.isInteger(k) || k < 1 || k > 32)
      throw new Error(`CPythonRandom: getrandbits supports 1 to 32 bits, got ${k}`);
    return this.nextUint32() >>> (32 - k);
  }

  /** `random.randint(a, b)`: a ≤ result ≤ b, for b - a + 1 < 2^32. */
  randint(a: number, b: number): number {
    const n = b - a + 1;
    if (!Number.isInteger(n) || n < 1 || n >= 2 ** 32)
      throw new Error(`CPythonRandom: randint(${a}, ${b}) is not supported`);
    const k = 32 - Math.clz32(n); // n.bit_length()
    let r = this.getrandbits(k);
    while (r >= n) r = this.getrandbits(k);
    return a + r;
  }

  private initGenrand(s: number): void {
    this.mt[0] = s >>> 0;
    for (let i = 1; i < N; i++) {
      const prev = this.mt[i - 1]! ^ (this.mt[i - 1]! >>> 30);
      this.mt[i] = (Math.imul(1812433253, prev) + i) >>> 0;
    }
    this.index = N;
  }

  private initByArray(key: number[]): void {
    this.initGenrand(19650218);
    let i = 1;
    let j = 0;
    for (let k = Math.max(N, key.length); k > 0; k--) {
      const prev = this.mt[i - 1]! ^ (this.mt[i - 1]! >>> 30);
      this.mt[i] = ((this.mt[i]! ^ Math.imul(prev, 1664525)) + key[j]! + j) >>> 0;
      i++;
      j++;
      if (i >= N) {
        this.mt[0] = this.mt[N - 1]!;
        i = 1;
      }
      if (j >= key.length) j = 0;
    }
    for (let k = N - 1; k > 0; k--) {
      const prev = this.mt[i - 1]! ^ (this.mt[i - 1]! >>> 30);
      this.mt[i] = ((this.mt[i]! ^ Math.imul(prev, 1566083941)) - i) >>> 0;
      i++;
      if (i >= N) {
        this.mt[0] = this.mt[N - 1]!;
        i = 1;
      }
    }
    this.mt[0] = 0x80000000;
  }

  private nextUint32(): number {
    if (this.index >= N) this.twist();
    let y = this.mt[this.index++]!;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  private twist(): void {
    const mt = this.mt;
    for (let kk = 0; kk < N; kk++) {
      const y = (mt[kk]! & 0x80000000) | (mt[(kk + 1) % N]! & 0x7fffffff);
      mt[kk] = mt[(kk + M) % N]! ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
    }
    this.index = 0;
  }
}
