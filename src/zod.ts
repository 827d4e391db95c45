import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { z as Z } from 'zod';

/**
 * zod, loaded on first use rather than when the library is imported: its
 * ~100 modules were a third of `import { createHold } from 'leasehold'`
 * (BENCHMARKS.md, import time), and an application that only creates holds
 * should not pay for the configuration or template rules at startup.
 *
 * Synchronous, because loadConfig, loadTemplates and the input rules are:
 * require() of zod's ES module build (Node >= 20.19, package.json engines),
 * which is the same module instance `import { z } from 'zod'` gives the HTTP
 * API, so schemas and ZodErrors are shared as before.
 */
let loaded: typeof Z | undefined;

export function zod(): typeof Z {
  if (loaded === undefined) {
    const require = createRequire(import.meta.url);
    loaded = (require(zodEntry(require)) as { z: typeof Z }).z;
  }
  return loaded;
}

/**
 * zod's ES module build, as `import` resolves it. Some module runners have
 * no import.meta.resolve (vite's, which runs vitest's globalSetup): there,
 * Node's require resolution, which gives zod's CommonJS build (fine where
 * no schema crosses from code that imported zod itself).
 */
function zodEntry(require: NodeJS.Require): string {
  try {
    return fileURLToPath(import.meta.resolve('zod'));
  } catch {
    return require.resolve('zod');
  }
}

/** A value built with zod on its first use and kept (a schema). */
export function onFirstUse<T>(build: (z: typeof Z) => T): () => T {
  let value: T | undefined;
  let built = false;
  return () => {
    if (!built) {
      value = build(zod());
      built = true;
    }
    return value as T;
  };
}
