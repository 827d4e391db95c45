import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/**
 * The package's root directory (where package.json, migrations/ and public/
 * live), found from this file whether it runs from src/ (tests) or
 * dist/src/ (the built package).
 */
export function packageRoot(): string {
  if (root) return root;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'migrations'))) return (root = dir);
    dir = path.dirname(dir);
  }
  throw new Error('leasehold: package root (package.json beside migrations/) not found');
}
