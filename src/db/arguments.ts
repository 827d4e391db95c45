import type { z as Z } from 'zod';
import { isReservedSchemaName } from '../config-schema.js';
import { ValidationError } from '../errors.js';
import { isSender, MAX_SENDER_LENGTH, SENDER_RULE } from '../model/address.js';
import { zodValidationError } from '../model/zod-issues.js';
import { onFirstUse } from '../zod.js';

/**
 * The library's argument rules, one place for every public function and
 * constructor: a wrong call throws ValidationError naming the argument
 * (`db`, `options`, `options.schema`) in the API's words (`required`,
 * `unknown field; did you mean schema?`). The schemas are built on the first
 * call, so importing the package entry does not load zod (test/architecture).
 */

const hasFunction = (value: unknown, name: string): boolean =>
  typeof value === 'object' && value !== null && typeof (value as Record<string, unknown>)[name] === 'function';

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Schemas shared by the checks below, built with zod on first use. */
export const rules = onFirstUse((z) => {
  const queryable = z.custom<unknown>((v) => hasFunction(v, 'query'), 'must be a pg Pool, Client or PoolClient (an object with a query function)');
  const pool = z.custom<unknown>((v) => hasFunction(v, 'query') && hasFunction(v, 'connect'), 'must be a pg Pool (an object with query and connect functions)');
  const schema = z
    .string('must be a string')
    .regex(SCHEMA_NAME, 'must be a lowercase SQL identifier (letters, digits, underscore)')
    .refine((name) => !isReservedSchemaName(name), 'must not be a PostgreSQL system schema (pg_* or information_schema)');
  const clock = z.custom<unknown>((v) => hasFunction(v, 'now'), 'must be a clock (an object with a now function)');
  const logger = z.custom<unknown>((v) => hasFunction(v, 'info') && hasFunction(v, 'warn') && hasFunction(v, 'error'), 'must be a logger (info, warn and error functions)');
  const gateway = z.custom<unknown>(
    (v) => hasFunction(v, 'send') && typeof (v as { name?: unknown }).name === 'string',
    'must be an email gateway (an object with a name and a send function)',
  );
  const sender = z
    .string('must be a string')
    .max(MAX_SENDER_LENGTH, `must be at most ${MAX_SENDER_LENGTH} characters`)
    .refine((v) => isSender(v), SENDER_RULE);
  const positive = z.number('must be a number').positive('must be greater than 0');
  const positiveInt = z.number('must be a number').int('must be a whole number').positive('must be at least 1');
  const nonNegative = z.number('must be a number').nonnegative('must be at least 0');
  const id = z.string('must be a string').min(1, 'must not be empty');
  const library = {
    schema: schema.optional(),
    clock: clock.optional(),
    logger: logger.optional(),
    actor: z.string('must be a string').optional(),
  };
  return { z, queryable, pool, schema, clock, logger, gateway, sender, positive, positiveInt, nonNegative, id, library };
});

export type Rules = ReturnType<typeof rules>;

/** Check one argument against a schema; its parsed value, or ValidationError(`name[.field]`, reason). */
export function checkArgument<T>(name: string, schema: Z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw zodValidationError(parsed.error, { prefix: name, schema, input: value });
  return parsed.data;
}

/**
 * Check an options object (absent is `{}`) against its known fields, built
 * from the shared rules: an unknown field is an error (`did you mean`), as
 * in the API. A string where the options belong is the 0.1 signature
 * (`migrate(pool, 'schema')`), said so.
 */
export function checkOptions(name: string, value: unknown, fields: Fields): void {
  if (value === undefined) return;
  if (typeof value === 'string') {
    throw new ValidationError(name, `must be an object like { schema }; a string is the 0.1 signature (pass { schema: ${JSON.stringify(value)} })`);
  }
  checkArgument(name, built(strictSchemas, fields, (r) => r.z.strictObject(fields(r), 'must be an object')), value);
}

type Fields = (r: Rules) => Record<string, Z.ZodType>;

/**
 * Each options schema is built once per `fields` function: building one
 * costs about 80 us, which the hold functions would otherwise pay on every
 * call (a POST /v1/holds). Pass a module-level `fields` on a hot path; an
 * inline arrow is built again each call (fine for a constructor).
 */
const strictSchemas = new WeakMap<Fields, Z.ZodType>();
const looseSchemas = new WeakMap<Fields, Z.ZodType>();
const librarySchemas = new WeakMap<Fields, Fields>();

function built(cache: WeakMap<Fields, Z.ZodType>, fields: Fields, build: (r: Rules) => Z.ZodType): Z.ZodType {
  let schema = cache.get(fields);
  if (!schema) {
    schema = build(rules());
    cache.set(fields, schema);
  }
  return schema;
}

const noExtra: Fields = () => ({});

/** `options` of the free functions: schema, clock, logger, actor, and the call's own `extra` fields. */
export function checkLibraryOptions(value: unknown, extra: Fields = noExtra): void {
  let fields = librarySchemas.get(extra);
  if (!fields) {
    fields = (r) => ({ ...r.library, ...extra(r) });
    librarySchemas.set(extra, fields);
  }
  checkOptions('options', value, fields);
}

/** The `db` argument: a pg Pool, Client or PoolClient. */
export function checkDb(value: unknown, name = 'db'): void {
  if (!hasFunction(value, 'query')) checkArgument(name, rules().queryable, value);
}

/** The `pool` argument of the calls that take their own transactions. */
export function checkPool(value: unknown, name = 'pool'): void {
  if (!(hasFunction(value, 'query') && hasFunction(value, 'connect'))) checkArgument(name, rules().pool, value);
}

/** A string argument that names a row (an id, an address, a tenant); its own rules are checked where it is used. */
export function checkString(name: string, value: unknown): void {
  if (typeof value !== 'string') checkArgument(name, rules().z.string(value === undefined ? 'required' : 'must be a string'), value);
}

/** A callback argument (withTransaction's work, an onLog hook). */
export function checkFunction(name: string, value: unknown): void {
  if (typeof value !== 'function') throw new ValidationError(name, value === undefined ? 'required' : 'must be a function');
}

/**
 * Options of a constructor the service also builds (workers, pruner,
 * gateways, templates): the known fields are checked, others are let
 * through, since the service passes its whole settings object on.
 */
export function checkKnownOptions(name: string, value: unknown, fields: Fields, { required = false } = {}): void {
  if (value === undefined && !required) return;
  // `required` names a missing value itself: the object's own type message is "must be an object".
  if (value === undefined) throw new ValidationError(name, 'required');
  checkArgument(name, built(looseSchemas, fields, (r) => r.z.object(fields(r), 'must be an object')), value);
}
