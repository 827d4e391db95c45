import type { Config } from '../config.js';
import { loadTemplates, type Templates } from './templates.js';

/** The templates the configuration names: LEASEHOLD_TEMPLATES_DIR, or the ones shipped in the package. */
export function templatesFromConfig(config: Pick<Config, 'templatesDir' | 'defaultLocale' | 'defaultTimeZone'>): Templates {
  return loadTemplates({
    ...(config.templatesDir ? { dir: config.templatesDir } : {}),
    defaultLocale: config.defaultLocale,
    defaultTimeZone: config.defaultTimeZone,
  });
}
