import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { MAX_SENDER_LENGTH, SENDER_PATTERN, SENDER_RULE } from '../model/address.js';
import { onFirstUse } from '../zod.js';
import { ValidationError } from '../errors.js';
import { describeZodError } from '../model/zod-issues.js';

/**
 * Where templates come from: a directory (`LEASEHOLD_TEMPLATES_DIR`, or the
 * one shipped in the package) read once into memory, or the same layout
 * passed as an object by library users. Rendering only ever reads this
 * in-memory map, so an include can never reach a file outside the set, and
 * editing a file on disk changes nothing until the templates are loaded
 * again (at the next start).
 *
 *   <kind>/meta.json                      optional: from, replyTo, headers, sample
 *   <kind>/<locale>/subject.liquid        required
 *   <kind>/<locale>/text.liquid           required
 *   <kind>/<locale>/html.liquid           required
 *   <kind>/<locale>/meta.json             optional: from, replyTo, headers for this locale
 *   partials/<name>.liquid                optional: {% render '<name>' %} from any template
 *   tenants/<tenant>/<kind>/...           optional: the same kind layout, for one tenant's holds
 *
 * A tenant's templates live under `tenants/`, not beside the kinds, so a
 * directory's depth alone says what it is (a kind and a tenant may share a
 * name); `tenants` and `partials` are therefore not kind names.
 */

/** Relative path (with `/`) -> file content. */
export type TemplateFiles = Record<string, string>;

export const PART_FILES = { subject: 'subject.liquid', text: 'text.liquid', html: 'html.liquid' } as const;
export type Part = keyof typeof PART_FILES;
export const PARTIALS_DIR = 'partials';
export const META_FILE = 'meta.json';
export const TENANTS_DIR = 'tenants';

const MAX_FILE_BYTES = 256 * 1024;
const MAX_FILES = 1000;

/** Header names a template may not set: the message's own fields, MIME structure, and leasehold's intent header. */
const RESERVED_HEADERS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'subject',
  'reply-to',
  'sender',
  'date',
  'message-id',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
  'x-leasehold-intent-id',
]);


/** Per-locale meta: who the message is from and extra headers. */
export const localeMetaSchema = onFirstUse((z) => {
  const address = (what: string) => z.string(`must be a string`).max(MAX_SENDER_LENGTH).regex(SENDER_PATTERN, `${SENDER_RULE} (${what})`);
  const headers = z
    .record(
      z.string().regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,75}$/, 'header names are letters, digits and "-"').refine((name) => !RESERVED_HEADERS.has(name.toLowerCase()), {
        message: 'is set by leasehold itself (use from/replyTo for those)',
      }),
      z.string().max(998, 'must be at most 998 characters').regex(/^[^\r\n]*$/, 'must be one line'),
    )
    .refine((h) => Object.keys(h).length <= 20, { message: 'at most 20 headers' });
  return z
    .object({
      from: address('from').optional(),
      replyTo: address('replyTo').optional(),
      headers: headers.optional(),
    })
    .strict();
});

/** Per-kind meta: the same defaults, plus sample metadata for `templates check` and `preview --sample`. */
export const kindMetaSchema = onFirstUse((z) =>
  localeMetaSchema()
    .extend({
      sample: z
        .object({
          metadata: z.record(z.string(), z.unknown()).optional(),
          /** The sample hold's deadline (default: a minute ago). */
          expiresAt: z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time with a time zone' }).optional(),
        })
        .strict()
        .optional(),
    })
    .strict(),
);

export type LocaleMeta = z.infer<ReturnType<typeof localeMetaSchema>>;
export type KindMeta = z.infer<ReturnType<typeof kindMetaSchema>>;

/** A problem found while loading or checking templates, located by file where possible. */
export interface TemplateProblem {
  /** e.g. `reservation-expired/de/text.liquid`, or the directory. */
  file: string;
  message: string;
}

export function describeProblem(p: TemplateProblem): string {
  if (typeof p !== 'object' || p === null || typeof p.file !== 'string' || typeof p.message !== 'string') {
    throw new ValidationError('problem', 'must be a TemplateProblem ({ file, message }) from Templates.problems');
  }
  return `${p.file}: ${p.message}`;
}

/**
 * Read a template directory into memory. Only `.liquid` files and
 * `meta.json` at the documented depths are read; anything else (a README,
 * editor backups) is ignored. Unreadable or oversized files are problems,
 * not exceptions, so `templates check` can list all of them.
 */
export function readTemplateDirectory(dir: string): { files: TemplateFiles; problems: TemplateProblem[] } {
  const files: TemplateFiles = {};
  const problems: TemplateProblem[] = [];
  const root = path.resolve(dir);
  try {
    if (!statSync(root).isDirectory()) return { files, problems: [{ file: dir, message: 'is not a directory' }] };
  } catch {
    return { files, problems: [{ file: dir, message: 'does not exist or cannot be read' }] };
  }
  // Under tenants/<tenant>/ the kind layout repeats, two levels deeper.
  const wanted = (rel: string[]) => {
    const kindPath = rel[0] === TENANTS_DIR ? rel.slice(2) : rel;
    if (rel[0] === TENANTS_DIR && rel.length < 4) return false;
    return (
      (kindPath.length === 2 && kindPath[1] === META_FILE) ||
      (rel.length === 2 && rel[0] === PARTIALS_DIR && rel[1]!.endsWith('.liquid')) ||
      (kindPath.length === 3 && (kindPath[2] === META_FILE || kindPath[2]!.endsWith('.liquid')))
    );
  };
  const walk = (rel: string[]) => {
    if (rel.length > (rel[0] === TENANTS_DIR ? 5 : 3)) return;
    let entries;
    try {
      entries = readdirSync(path.join(root, ...rel), { withFileTypes: true });
    } catch (error) {
      problems.push({ file: path.posix.join(...rel, '') || dir, message: `cannot be read: ${(error as Error).message}` });
      return;
    }
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.name.startsWith('.')) continue;
      const next = [...rel, entry.name];
      if (entry.isDirectory()) walk(next);
      else if (entry.isFile() && wanted(next)) {
        const key = next.join('/');
        if (Object.keys(files).length >= MAX_FILES) {
          problems.push({ file: key, message: `too many template files (at most ${MAX_FILES})` });
          return;
        }
        try {
          const content = readFileSync(path.join(root, ...next));
          if (content.byteLength > MAX_FILE_BYTES) problems.push({ file: key, message: `is larger than ${MAX_FILE_BYTES} bytes` });
          else files[key] = content.toString('utf8');
        } catch (error) {
          problems.push({ file: key, message: `cannot be read: ${(error as Error).message}` });
        }
      }
    }
  };
  walk([]);
  return { files, problems };
}

/** Parse and validate a meta.json; a problem on failure. */
export function parseMeta<S extends z.ZodType>(schema: S, file: string, text: string | undefined): { meta?: z.output<S>; problem?: TemplateProblem } {
  if (text === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problem: { file, message: `is not valid JSON: ${(error as Error).message}` } };
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const { path, message } = describeZodError(parsed.error, { schema, input: value });
    return { problem: { file, message: `${path.map(String).join('.') || 'meta'}: ${message}` } };
  }
  return { meta: parsed.data };
}

/** `partials/<name>.liquid` files, keyed `<name>.liquid` as LiquidJS looks them up. */
export function partialsOf(files: TemplateFiles): Record<string, string> {
  const partials: Record<string, string> = {};
  for (const [file, content] of Object.entries(files)) {
    const [top, name, ...rest] = file.split('/');
    if (top === PARTIALS_DIR && name?.endsWith('.liquid') && rest.length === 0) partials[name] = content;
  }
  return partials;
}

/** Per tenant ('' for the shared templates), kind directories and, for each, its locale directories (sorted). */
export function kindsOf(files: TemplateFiles): Map<string, Map<string, string[]>> {
  const tenants = new Map<string, Map<string, Set<string>>>();
  for (const file of Object.keys(files).sort()) {
    let segments = file.split('/');
    let tenant = '';
    if (segments[0] === TENANTS_DIR) {
      if (segments.length < 4) continue;
      tenant = segments[1]!;
      segments = segments.slice(2);
    }
    if (segments[0] === PARTIALS_DIR || segments.length < 2) continue;
    const kinds = tenants.get(tenant) ?? new Map<string, Set<string>>();
    const locales = kinds.get(segments[0]!) ?? new Set<string>();
    if (segments.length === 3) locales.add(segments[1]!);
    kinds.set(segments[0]!, locales);
    tenants.set(tenant, kinds);
  }
  const sorted = <V,>(map: Map<string, V>) => [...map].sort(([a], [b]) => a.localeCompare(b));
  return new Map(sorted(tenants).map(([tenant, kinds]) => [tenant, new Map(sorted(kinds).map(([kind, locales]) => [kind, [...locales].sort()]))]));
}
