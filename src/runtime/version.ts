import { readFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from './package-root.js';

let version: string | undefined;

/** This leasehold's version, from its package.json (`leasehold --version`, the OpenAPI document). */
export function packageVersion(): string {
  version ??= (JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
  return version;
}
