import type { Context, Liquid, Template } from 'liquidjs';
import { liquidjs } from './liquid.js';
import { formatLocalTime, LOCAL_TIME_STYLES, type LocalTimeStyle } from './locale.js';

/**
 * LiquidJS configured as a sandbox for templates written by operators:
 *
 * - no file system: includes and renders resolve only in the in-memory
 *   partials of the loaded set (`templates` option), never on disk;
 * - strict: an undefined variable or an unknown filter is an error, not an
 *   empty string (`{% if metadata.x %}` and `| default:` still work, so a
 *   template can guard optional metadata);
 * - own properties only: no `constructor`, no prototype;
 * - bounded, deterministically: template size and the allocations one render
 *   may make (ranges, loops, string building) are limited. Not render time:
 *   a wall-clock limit would turn a starved CPU into a rejected message, and
 *   a rejection is terminal;
 * - host-independent: the `date` filter formats in UTC and English, so output
 *   never depends on the machine's zone (use `local_time` for the customer's).
 *
 * The HTML part renders with `outputEscape: 'escape'`; subject and text are
 * plain text and are not escaped.
 */
export interface Engines {
  text: Liquid;
  html: Liquid;
}

/**
 * Allocation units (range items, characters built by filters) one render may
 * use: at most 100,000 loop iterations over ranges in all, far beyond any
 * email and small enough that a runaway loop ends in well under a second.
 */
export const RENDER_MEMORY_LIMIT = 100_000;

export function createEngines(partials: Record<string, string>): Engines {
  const base = {
    templates: partials,
    extname: '.liquid',
    relativeReference: false,
    strictVariables: true,
    strictFilters: true,
    ownPropertyOnly: true,
    lenientIf: true,
    timezoneOffset: 0,
    locale: 'en',
    cache: true,
    parseLimit: 1_000_000,
    memoryLimit: RENDER_MEMORY_LIMIT,
  };
  const { Liquid } = liquidjs();
  const text = new Liquid(base);
  const html = new Liquid({ ...base, outputEscape: 'escape' });
  for (const engine of [text, html]) engine.registerFilter('local_time', localTimeFilter);
  return { text, html };
}

/**
 * Render `templates` with `engine`, the variables as globals (so partials
 * see them too), in a RenderContext.
 */
export function renderWith(engine: Liquid, templates: Template[], globals: object): string {
  renderContextClass ??= defineRenderContext();
  return String(engine.renderSync(templates, new renderContextClass({}, engine.options, { sync: true, globals }, { liquid: engine })));
}

/**
 * What an undefined variable throws inside LiquidJS. Lenient reads
 * (`{% if metadata.x %}`, `| default:`) recognise it by this name and read
 * null; every other read turns it into an UndefinedVariableError with this
 * message. Not an Error: building one (even without a stack) was a fifth of
 * the render time, once per missing key in each `if`.
 */
class UndefinedVariable {
  readonly name = 'InternalUndefinedVariableError';
  constructor(
    private readonly path: readonly unknown[],
    private readonly index: number,
  ) {}
  // Built only when read: a lenient read never does.
  get message(): string {
    return `undefined variable: ${this.path.slice(0, this.index + 1).join('.')}`;
  }
  get stack(): string {
    return `${this.name}: ${this.message}`;
  }
}

/**
 * The lookups LiquidJS makes leniently (`lenientIf`), by their path: a
 * variable in an if, elsif, unless, case or when condition or an assign, or
 * one before a `default` filter, reads as nil when undefined instead of
 * failing the render. LiquidJS learns that a variable is undefined from an
 * exception, which it catches for these; each throw and catch cost about
 * half a microsecond, nine per message of the shipped expiry email when the
 * hold's metadata names none of its optional fields. RenderContext answers
 * these paths' undefined variables with that nil at once. LiquidJS passes a
 * literal path's array itself to the lookup, so the array marks the place;
 * a path it builds at render time (a computed `a[b]`) is not marked and
 * throws as before, with the same result.
 */
const lenientPaths = new WeakSet<object>();

/**
 * Mark the lenient lookups of parsed `templates` (markLenientLookups'
 * walk follows LiquidJS 10's tags: if, unless, case, assign, and any tag
 * with a value or nested templates). A lookup it does not recognise stays
 * unmarked: it throws and is caught as before. Answers the paths marked.
 */
export function markLenientLookups(templates: readonly Template[]): string[] {
  const { IfTag, UnlessTag, CaseTag, AssignTag, Value, Expression, Filter } = liquidjs();
  const marked: string[] = [];
  const lookup = (token: unknown) => {
    const path = (token as { literalPath?: unknown } | null)?.literalPath;
    if (!Array.isArray(path)) return;
    lenientPaths.add(path);
    marked.push(path.join('.'));
  };
  const value = (v: unknown, lenient: boolean) => {
    if (!(v instanceof Value)) return;
    // As Value.value(): a value whose first filter is `default` is read leniently wherever it is.
    const { filters, initial } = v as unknown as { filters: Array<{ name?: string }>; initial: unknown };
    if ((lenient || filters[0]?.name === 'default') && initial instanceof Expression) {
      for (const token of (initial as unknown as { postfix: unknown[] }).postfix) lookup(token);
    }
  };
  // Nested templates (a branch's, a loop's, a capture's): renderable, and not a value's filters, which render too.
  const isTemplates = (list: unknown): list is Template[] =>
    Array.isArray(list) && list.every((t) => typeof (t as { render?: unknown } | null)?.render === 'function' && !(t instanceof Filter));
  const walk = (list: readonly unknown[]) => {
    for (const node of list) {
      const tag = node as Record<string, unknown>;
      const branches = (Array.isArray(tag['branches']) ? tag['branches'] : []) as Array<Record<string, unknown>>;
      if (node instanceof IfTag || node instanceof UnlessTag) {
        for (const branch of branches) value(branch['value'], true);
      } else if (node instanceof CaseTag) {
        value(tag['value'], true);
        for (const branch of branches) if (Array.isArray(branch['values'])) branch['values'].forEach(lookup);
      } else if (node instanceof AssignTag) {
        value(tag['value'], true);
      } else {
        value(tag['value'], false);
      }
      for (const branch of branches) if (isTemplates(branch['templates'])) walk(branch['templates']);
      for (const [key, child] of Object.entries(tag)) if (key !== 'branches' && isTemplates(child)) walk(child);
    }
  };
  walk(templates);
  return marked;
}

type ContextClass = typeof import('liquidjs').Context;
type Lookup = ReturnType<Context['_getFromScope']>;
type Key = Parameters<Context['readProperty']>[1];
let renderContextClass: ContextClass | undefined;

// Defined on first use: LiquidJS is loaded only when templates are.
function defineRenderContext(): ContextClass {
  // As LiquidJS tells a value still to be resolved.
  const pending = (value: unknown): boolean => {
    const v = value as { then?: unknown; next?: unknown; throw?: unknown; return?: unknown } | null | undefined;
    return (!!v && typeof v.then === 'function') || (typeof v === 'object' && v !== null && typeof v.next === 'function' && typeof v.throw === 'function' && typeof v.return === 'function');
  };
  /**
   * LiquidJS's Context with its strict lookup walked the same way (the
   * properties read one by one with its own readProperty), except that an
   * undefined variable throws an UndefinedVariable, or, on a path
   * markLenientLookups marked, reads as nil at once. Partials
   * ({% render %}) render in LiquidJS's own Context, as before.
   */
  return class RenderContext extends liquidjs().Context {
    override _getFromScope(scope: unknown, paths: Parameters<Context['_getFromScope']>[1], strictVariables = this.strictVariables): Lookup {
      if (!strictVariables) return super._getFromScope(scope, paths, false);
      // A value or a generator, as LiquidJS's own: its callers accept either.
      return this.#read(scope, typeof paths === 'string' ? paths.split('.') : paths, 0) as Lookup;
    }

    #read(scope: unknown, path: Key[], start: number): unknown {
      for (let i = start; i < path.length; i++) {
        scope = this.readProperty(scope as object, path[i]!);
        if (pending(scope)) return this.#resume(scope, path, i);
        if (scope === undefined) {
          // What LiquidJS's catch would answer for a lenient lookup, without the throw.
          if (lenientPaths.has(path)) return null;
          throw new UndefinedVariable(path, i);
        }
      }
      return scope;
    }

    // A Drop that answers with a promise or a generator: LiquidJS resolves what is yielded.
    *#resume(pendingValue: unknown, path: Key[], i: number): Generator<unknown, unknown, unknown> {
      const scope = yield pendingValue;
      if (scope === undefined) throw new UndefinedVariable(path, i);
      return yield this.#read(scope, path, i + 1);
    }
  };
}

/**
 * `{{ metadata.slotAt | local_time }}`, `| local_time: 'date'` (or `time`,
 * `weekday`, `zone`, `iso`): an ISO 8601 timestamp from the hold's metadata
 * formatted in the customer's locale and time zone, like expiresAt.
 */
// A zone is required: without one, JavaScript reads the time in the host's zone.
const ISO_WITH_ZONE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;

// A message formats the same timestamp in several places (subject, text, html): it is read once.
let lastTimestamp: { text: string; at: Date } | undefined;

function timestamp(value: unknown): Date | undefined {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : new Date(value);
  if (typeof value !== 'string') return undefined;
  if (lastTimestamp?.text === value) return lastTimestamp.at;
  const at = new Date(value);
  if (Number.isNaN(at.getTime()) || !ISO_WITH_ZONE.test(value)) return undefined;
  lastTimestamp = { text: value, at };
  return at;
}

function localTimeFilter(this: { context: Context }, value: unknown, style: unknown = 'full'): string {
  const globals = this.context.globals as { locale?: unknown; timeZone?: unknown };
  if (!LOCAL_TIME_STYLES.includes(style as LocalTimeStyle)) {
    throw new Error(`local_time: style must be one of ${LOCAL_TIME_STYLES.join(', ')}`);
  }
  const at = timestamp(value);
  if (!at) {
    // The value itself stays out of the message: it is the hold's data.
    throw new Error('local_time: the value is not an ISO 8601 date-time with a time zone');
  }
  return formatLocalTime(at, String(globals.locale), String(globals.timeZone), style as LocalTimeStyle);
}
