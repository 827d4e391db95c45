import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * LiquidJS, loaded the first time a template set is (it is a tenth of a
 * second of import time that an application which only creates holds never
 * needs). Synchronous, because loading and rendering templates are. Its
 * CommonJS build is the one `import 'liquidjs'` resolves to as well, so
 * there is one Drop class either way.
 */
export function liquidjs(): typeof import('liquidjs') {
  return require('liquidjs') as typeof import('liquidjs');
}
