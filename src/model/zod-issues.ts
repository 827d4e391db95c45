import type { z } from 'zod';
import { ValidationError } from '../errors.js';
import { zod } from '../zod.js';

/**
 * The one place a ZodError becomes words a caller reads: the API's 400s,
 * the library's ValidationErrors, configuration variables, accounts files,
 * template meta.json and capacity input all say a mistake the same way
 * (`customerEmail: required`, `customer_email: unknown field; did you mean
 * customerEmail?`, `ttlSeconds: must be an integer`).
 *
 * A message a schema sets itself (`z.string('must be a string')`,
 * `.min(1, 'must be at least 1')`) is kept; only zod's own English
 * (`Invalid input: expected record, received array`) is replaced, by
 * rewording the issue from its code. Two things the issue alone cannot say
 * come from the context: whether the value was there at all (a missing
 * field is `required`, whatever its type message says) and which fields the
 * object knows (for "did you mean").
 */

type Issue = z.core.$ZodIssue;

export interface IssueContext {
  /** The value that was parsed: a field absent from it is `required`, and present fields are not suggested again. */
  input?: unknown;
  /** The schema it was parsed with: the fields an unknown one is compared with. */
  schema?: z.ZodType;
}

export interface IssueProblem {
  /** Where, as zod's path (the unknown field itself for an unknown field). */
  path: PropertyKey[];
  /** Our wording, without the field. */
  message: string;
}

/**
 * The one problem to report from a ZodError: an unknown field first (it is
 * usually the cause: `customer_email` given is why `customerEmail` is
 * missing), else the first issue.
 */
export function describeZodError(error: z.ZodError, context: IssueContext = {}): IssueProblem {
  const issue = error.issues.find((i) => i.code === 'unrecognized_keys') ?? error.issues.find((i) => !isSafeIntegerRange(i)) ?? error.issues[0];
  if (issue === undefined) return { path: [], message: 'is not valid' };
  return describeIssue(issue, context);
}

/** A ZodError as a ValidationError naming the field (`prefix.path`, or `body` for the whole value). */
export function zodValidationError(error: z.ZodError, context: IssueContext & { prefix?: string } = {}): ValidationError {
  const { path, message } = describeZodError(error, context);
  const field = [context.prefix ?? '', ...path.map(String)].filter(Boolean).join('.');
  return new ValidationError(field || 'body', message);
}

function describeIssue(issue: Issue, context: IssueContext, base: PropertyKey[] = []): IssueProblem {
  const path = [...base, ...issue.path];
  switch (issue.code) {
    case 'unrecognized_keys': {
      const key = issue.keys[0]!;
      const suggestion = didYouMean(key, knownKeys(context.schema, path), presentKeys(context.input, path));
      return { path: [...path, key], message: suggestion ? `unknown field; did you mean ${suggestion}?` : 'unknown field' };
    }
    case 'invalid_union': {
      const discriminated = issue as typeof issue & { note?: string; options?: unknown[] };
      if (discriminated.note === 'No matching discriminator') {
        return { path, message: ownMessage(issue) ?? oneOf(discriminated.options ?? []) };
      }
      if (isMissing(context, path)) return { path, message: 'required' };
      if (!isDefault(issue)) return { path, message: issue.message };
      // The branch that got past its type check says what is wrong; if none did, name the types accepted.
      const matched = issue.errors.find((branch) => branch.length > 0 && branch[0]!.code !== 'invalid_type');
      if (matched) return describeIssue(matched[0]!, context, path);
      const types = [...new Set(issue.errors.flatMap((branch) => branch.filter((i) => i.code === 'invalid_type').map((i) => typeWord(i.expected))))];
      return { path, message: types.length > 0 ? `must be ${types.join(' or ')}` : 'is not valid' };
    }
    case 'invalid_key':
    case 'invalid_element': {
      const inner = issue.issues[0];
      if (!isDefault(issue) || inner === undefined) return { path, message: ownMessage(issue) ?? 'is not valid' };
      // The path already names the key; a key rule's own message reads as is (`headers.Bcc: is set by leasehold itself`).
      const described = describeIssue(inner, {}, []);
      return { path, message: issue.code === 'invalid_key' && isDefault(inner) ? `key ${described.message}` : described.message };
    }
    case 'invalid_type':
      // Absent is "required" even where the schema words the type itself (`z.string('must be a string')`).
      if (isMissing(context, path) || receivedUndefined(issue)) {
        return { path, message: path.length === 0 && issue.expected === 'object' ? 'required (a JSON object)' : 'required' };
      }
      return { path, message: ownMessage(issue) ?? `must be ${typeWord(issue.expected)}` };
    default:
      // The int rule's own message ("must be a whole number") is wrong about 1e20, which is whole and too large.
      return { path, message: isSafeIntegerRange(issue) ? reword(issue) : (ownMessage(issue) ?? reword(issue)) };
  }
}

/**
 * zod's `.int()` also refuses a number past ±2^53 (9007199254740991), as a
 * too_big/too_small issue carrying the int rule's message. A field's own
 * bound, when it has one, says it better, so that issue is reported first;
 * alone, it is worded from its bound.
 */
function isSafeIntegerRange(issue: Issue): boolean {
  return (issue.code === 'too_big' || issue.code === 'too_small') && issue.origin === 'int';
}

/** Our words for an issue zod worded itself. */
function reword(issue: Issue): string {
  switch (issue.code) {
    case 'invalid_value':
      return oneOf(issue.values);
    case 'too_big':
      return `must be ${issue.exact ? 'exactly' : issue.inclusive === false ? 'less than' : 'at most'} ${bound(issue.maximum, issue.origin)}`;
    case 'too_small':
      return `must be ${issue.exact ? 'exactly' : issue.inclusive === false ? 'more than' : 'at least'} ${bound(issue.minimum, issue.origin)}`;
    case 'invalid_format':
      return formatWord(issue);
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    default:
      return 'is not valid';
  }
}

function oneOf(values: readonly unknown[]): string {
  const shown = values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v) ?? String(v)));
  return shown.length === 1 ? `must be ${shown[0]}` : `must be one of ${shown.join(', ')}`;
}

const UNITS: Record<string, string> = { string: 'characters', array: 'items', set: 'items', map: 'entries', file: 'bytes' };

function bound(limit: number | bigint, origin: string): string {
  if (origin === 'date') return new Date(Number(limit)).toISOString();
  const unit = UNITS[origin];
  return unit ? `${String(limit)} ${limit === 1 || limit === 1n ? unit.replace(/s$/, '') : unit}` : String(limit);
}

const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  bigint: 'an integer',
  boolean: 'true or false',
  object: 'an object',
  record: 'an object',
  map: 'an object',
  array: 'an array',
  tuple: 'an array',
  set: 'an array',
  date: 'a date',
  null: 'null',
  undefined: 'left out',
  never: 'left out',
  nan: 'NaN',
  file: 'a file',
};

function typeWord(expected: string): string {
  return TYPE_WORDS[expected] ?? expected;
}

const FORMAT_WORDS: Record<string, string> = {
  email: 'an email address',
  url: 'a URL',
  uuid: 'a UUID',
  guid: 'a GUID',
  datetime: 'an ISO 8601 date-time',
  date: 'an ISO 8601 date (YYYY-MM-DD)',
  time: 'an ISO 8601 time',
  duration: 'an ISO 8601 duration',
  ipv4: 'an IPv4 address',
  ipv6: 'an IPv6 address',
  cidrv4: 'an IPv4 range',
  cidrv6: 'an IPv6 range',
  base64: 'base64',
  base64url: 'base64url',
  e164: 'an E.164 phone number',
  jwt: 'a JWT',
};

function formatWord(issue: z.core.$ZodIssueInvalidStringFormat): string {
  const i = issue as z.core.$ZodIssueInvalidStringFormat & { prefix?: string; suffix?: string; includes?: string };
  if (i.format === 'starts_with') return `must start with ${JSON.stringify(i.prefix)}`;
  if (i.format === 'ends_with') return `must end with ${JSON.stringify(i.suffix)}`;
  if (i.format === 'includes') return `must include ${JSON.stringify(i.includes)}`;
  if (i.format === 'regex') return `must match ${i.pattern ?? 'the pattern'}`;
  const word = FORMAT_WORDS[i.format];
  return word ? `must be ${word}` : `must be a valid ${i.format}`;
}

/** The issue's message when a schema set it, undefined when it is zod's default. */
function ownMessage(issue: Issue): string | undefined {
  return isDefault(issue) ? undefined : issue.message;
}

/**
 * Whether zod worded the message itself: it is what the active locale says
 * for the issue. An invalid_type's default names the type received, which
 * the finished issue no longer carries, so each kind of value is tried.
 */
function isDefault(issue: Issue): boolean {
  return defaultMessages(issue).includes(issue.message);
}

const SAMPLES: unknown[] = [undefined, null, '', 0, Number.NaN, Number.POSITIVE_INFINITY, 0n, true, [], {}, new Date(0), Symbol('s'), () => 0, new Map(), new Set()];

/** What the active locale says for an issue (with `input` standing in for the value received). */
function localeSays(issue: Issue, input?: { input: unknown }): string | undefined {
  const out = zod().config().localeError?.((input ? { ...issue, ...input } : issue) as never);
  return typeof out === 'string' ? out : out?.message;
}

function defaultMessages(issue: Issue): string[] {
  const said = issue.code === 'invalid_type' ? SAMPLES.map((input) => localeSays(issue, { input })) : [localeSays(issue)];
  return [...said.filter((m): m is string => m !== undefined), 'Invalid input'];
}

/** zod's default message for a value that was not there (read from the message when there is no input to look at). */
function receivedUndefined(issue: Issue): boolean {
  const missing = localeSays(issue, { input: undefined });
  return missing === issue.message && SAMPLES.slice(1).every((input) => localeSays(issue, { input }) !== missing);
}

/** True when the input was given (as a key, even if undefined) and has nothing at `path`: a value or a parent left out. */
function isMissing(context: IssueContext, path: readonly PropertyKey[]): boolean {
  if (!('input' in context)) return false;
  let value: unknown = context.input;
  for (const key of path) {
    if (value === undefined) return true;
    if (value === null || typeof value !== 'object') return false;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value === undefined;
}

function presentKeys(input: unknown, path: readonly PropertyKey[]): Set<string> {
  let value: unknown = input;
  for (const key of path) value = value !== null && typeof value === 'object' ? (value as Record<PropertyKey, unknown>)[key] : undefined;
  return new Set(value !== null && typeof value === 'object' ? Object.keys(value) : []);
}

/** The fields an object schema at `path` knows (through optional, nullable, default, pipe, union, array and record). */
export function knownKeys(schema: z.ZodType | undefined, path: readonly PropertyKey[]): string[] {
  if (schema === undefined) return [];
  let level: z.core.$ZodType[] = [schema];
  for (const key of path) level = level.flatMap((s) => objects(s)).flatMap((s) => child(s, key));
  return [...new Set(level.flatMap((s) => objects(s)).flatMap((s) => Object.keys(shapeOf(s))))];
}

type Def = { type: string; [k: string]: unknown };
const defOf = (s: z.core.$ZodType): Def => s._zod.def as unknown as Def;
const shapeOf = (s: z.core.$ZodType): Record<string, z.core.$ZodType> => (defOf(s).shape as Record<string, z.core.$ZodType>) ?? {};

/** The schemas a value is checked by, down to objects, arrays, records (wrappers removed). */
function objects(s: z.core.$ZodType, depth = 0): z.core.$ZodType[] {
  if (depth > 20) return [];
  const def = defOf(s);
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'nonoptional':
    case 'readonly':
    case 'catch':
      return objects(def.innerType as z.core.$ZodType, depth + 1);
    case 'pipe':
      return objects(def.in as z.core.$ZodType, depth + 1);
    case 'lazy':
      return objects((def.getter as () => z.core.$ZodType)(), depth + 1);
    case 'union':
      return (def.options as z.core.$ZodType[]).flatMap((o) => objects(o, depth + 1));
    case 'intersection':
      return [...objects(def.left as z.core.$ZodType, depth + 1), ...objects(def.right as z.core.$ZodType, depth + 1)];
    default:
      return [s];
  }
}

function child(s: z.core.$ZodType, key: PropertyKey): z.core.$ZodType[] {
  const def = defOf(s);
  if (def.type === 'object') {
    const field = shapeOf(s)[String(key)];
    return field ? [field] : [];
  }
  if (def.type === 'array') return [def.element as z.core.$ZodType];
  if (def.type === 'record') return [def.valueType as z.core.$ZodType];
  return [];
}

/**
 * Names that all mean "an email address": a field by one of them where the
 * schema takes another is suggested across the group (`email` on a body
 * that takes `address`), since no spelling rule connects them.
 */
const ADDRESS_NAMES = ['address', 'email', 'emailaddress', 'customeremail', 'recipient', 'to'];

const normal = (name: string) => name.toLowerCase().replace(/[-_\s.]/g, '');

/**
 * The known field an unknown one most likely meant: the same name ignoring
 * case and `_`/`-` (customer_email → customerEmail), else one a few edits
 * away (customerEmial → customerEmail), else an address synonym; a field
 * already given is not suggested. Undefined when nothing is close.
 */
export function didYouMean(unknown: string, known: readonly string[], present: ReadonlySet<string> = new Set()): string | undefined {
  const candidates = known.filter((k) => !present.has(k) && k !== unknown);
  const wanted = normal(unknown);
  const same = candidates.find((k) => normal(k) === wanted);
  if (same) return same;
  const limit = Math.max(1, Math.min(3, Math.floor(wanted.length / 3)));
  const [best] = candidates.map((k) => ({ k, d: editDistance(wanted, normal(k)) })).filter((c) => c.d <= limit).sort((a, b) => a.d - b.d);
  if (best) return best.k;
  if (ADDRESS_NAMES.includes(wanted)) {
    const addresses = candidates.filter((k) => ADDRESS_NAMES.includes(normal(k)));
    if (addresses.length === 1) return addresses[0];
  }
  return undefined;
}

/** Levenshtein distance (insertions, deletions, substitutions). */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
