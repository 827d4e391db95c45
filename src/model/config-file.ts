import { createRequire } from 'node:module';
import type { parse as Parse } from 'yaml';
import type { z } from 'zod';
import { ConfigError } from '../errors.js';
import { describeZodError } from './zod-issues.js';

/** yaml, loaded on first use (as zod is, src/zod.ts): the library entry reaches the file parsers through the registry but never reads a file. */
let parseYaml: typeof Parse | undefined;
const yaml = (): typeof Parse => (parseYaml ??= (createRequire(import.meta.url)('yaml') as { parse: typeof Parse }).parse);

/** A configuration file's one-line refusal: the variable that names it, then `field: message`. */
export const configFileFailure =
  (source: string) =>
  (field: string, message: string): never => {
    throw new ConfigError(source, field ? `${field}: ${message}` : message);
  };

/** A YAML configuration file's document (the accounts file, the tokens file), or its one-line ConfigError. */
export function configFileDocument(text: string, source: string): unknown {
  try {
    return yaml()(text);
  } catch (error) {
    return configFileFailure(source)('', `not valid YAML: ${(error as Error).message.split('\n')[0]}`);
  }
}

/**
 * A YAML configuration file checked against `schema`: its data, or the
 * one-line ConfigError naming the first field at fault
 * (`accounts[1].rate.perSecond: ...`). Also returns the file's `fail`, for
 * the checks the schema cannot make (a name given twice, a secret not set).
 */
export function parseConfigFile<S extends z.ZodType>(
  text: string,
  source: string,
  schema: S,
): { data: z.infer<S>; fail: (field: string, message: string) => never } {
  const fail = configFileFailure(source);
  const doc = configFileDocument(text, source);
  const parsed = schema.safeParse(doc);
  if (!parsed.success) {
    const { path, message } = describeZodError(parsed.error, { schema, input: doc });
    return fail(fieldOf(path), message);
  }
  return { data: parsed.data, fail };
}

/** `accounts[1].rate.perSecond` from a zod path. */
function fieldOf(path: ReadonlyArray<PropertyKey>): string {
  return path.reduce<string>((out, key) => (typeof key === 'number' ? `${out}[${key}]` : out ? `${out}.${String(key)}` : String(key)), '');
}
