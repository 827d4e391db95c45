import { createRequire } from 'node:module';
import type { parse as Parse } from 'yaml';
import { ConfigError } from '../errors.js';

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
