import { MissingPackageError } from '../errors.js';

/**
 * Load a module that needs an optional dependency, on first use: the
 * provider SDKs and the embedded PostgreSQL binaries cost an application
 * that only creates holds nothing, neither install size nor import time.
 * `load` is the dynamic import of the module that needs it; if it fails
 * because `packageName` itself cannot be found, the caller gets a
 * MissingPackageError naming it. Any other failure (a broken package, a
 * missing package of its own) is passed on as it was.
 */
export async function importOptional<T>(
  packageName: string,
  neededFor: string,
  load: () => Promise<T>,
  /** What to `npm install` when that is not `packageName` itself. */
  install: string = packageName,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (isMissing(error, packageName)) throw new MissingPackageError(packageName, neededFor, install, { cause: error });
    throw error;
  }
}

/** Node's "Cannot find package 'x' imported from ..." (ESM) or "Cannot find module 'x'" (require), for this package. */
function isMissing(error: unknown, packageName: string): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  return typeof message === 'string' && (message.includes(`'${packageName}'`) || message.includes(`'${packageName}/`));
}
