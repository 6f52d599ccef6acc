// The package's version, read from package.json: what every output that records a version carries.
import { readFileSync } from 'node:fs';

export const PACKAGE_VERSION: string = JSON.parse(
  readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
).version;
