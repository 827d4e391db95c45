import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { buildApp } from '../../src/server/app.js';
import { cell, generatedNotice } from './markdown.js';

/**
 * docs/api.md, rendered from the OpenAPI document the API serves at
 * `GET /v1/openapi.json`. The renderer walks whatever JSON Schema the
 * document holds ($ref into components, allOf, anyOf/oneOf, `type` arrays
 * for nullable, arrays, maps), so a change to the routes' schemas reaches
 * the page with `npm run docs`; test/docs/generated.test.ts fails while the
 * page is stale.
 */

const TOKEN = 'docs-reference-token';

/**
 * The document, from an app built as the service builds it. The pool is
 * never connected: the document route reads nothing from the database
 * (test/docs/generated.test.ts checks that no connection was opened).
 */
export async function fetchOpenApiDocument(): Promise<{ document: OpenApiDocument; connections: number }> {
  const pool = new pg.Pool({ connectionString: 'postgres://docs@127.0.0.1:1/none', max: 1 });
  let connections = 0;
  pool.on('connect', () => connections++);
  const app = buildApp({ pool, schema: 'leasehold', config: loadConfig({}), logger: silentLogger, metrics: createMetrics(), apiToken: TOKEN });
  try {
    // No token: the document is open, as a client generator fetches it.
    const response = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
    if (response.statusCode !== 200) throw new Error(`GET /v1/openapi.json answered ${response.statusCode}: ${response.body.slice(0, 200)}`);
    return { document: response.json() as OpenApiDocument, connections };
  } finally {
    await app.close();
    await pool.end();
  }
}

export type Schema = { [key: string]: unknown } | boolean;

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: Schema;
  $ref?: string;
}

interface MediaTypes {
  [mediaType: string]: { schema?: Schema };
}

interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  deprecated?: boolean;
  security?: Array<Record<string, unknown>>;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; description?: string; content?: MediaTypes; $ref?: string };
  responses?: Record<string, { description?: string; content?: MediaTypes; $ref?: string }>;
}

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description?: string };
  security?: Array<Record<string, unknown>>;
  components?: { schemas?: Record<string, Schema>; securitySchemes?: Record<string, { type?: string; scheme?: string; description?: string }>; [other: string]: unknown };
  paths: Record<string, Record<string, unknown>>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

/** A field of a body or response, flattened: `hold.expiresAt`, `attempts[].outcome`. */
interface Field {
  path: string;
  type: string;
  required: boolean;
  notes: string;
}

class Renderer {
  /** Each component schema by its canonical JSON, so an inlined copy is named rather than expanded again. */
  private readonly components = new Map<string, string>();

  /** `status description` of the refusals at least half the operations give word for word. */
  readonly common = new Set<string>();
  private readonly commonDescriptions = new Map<string, string>();

  constructor(private readonly document: OpenApiDocument) {
    for (const [name, schema] of Object.entries(document.components?.schemas ?? {})) this.components.set(canonical(schema), name);
    const counts = new Map<string, number>();
    let operations = 0;
    for (const item of Object.values(document.paths)) {
      for (const method of METHODS) {
        const operation = item[method] as Operation | undefined;
        if (!operation) continue;
        operations += 1;
        for (const [status, raw] of Object.entries(operation.responses ?? {})) {
          if (Number(status) < 400) continue;
          const key = refusalKey(status, this.resolve(raw));
          counts.set(key, (counts.get(key) ?? 0) + 1);
        }
      }
    }
    for (const [key, count] of counts) {
      if (count * 2 < operations) continue;
      this.common.add(key);
      const [status, ...words] = key.split(' ');
      this.commonDescriptions.set(status!, words.join(' '));
    }
  }

  /** The shared refusals, once, for every route that lists them. */
  refusals(): string[] {
    const statuses = [...this.commonDescriptions.keys()].sort();
    if (statuses.length === 0) return [];
    return [
      '## Refusals',
      '',
      'Most routes can also answer these, each in the [`Error`](#error-schema) shape; a route lists the ones it gives.',
      '',
      ...statuses.map((status) => `- **${status}**: ${this.commonDescriptions.get(status)}`),
      '',
    ];
  }

  /** The component a schema is (by `$ref`, or by being an exact copy of one), if any. */
  componentOf(schema: Schema): string | undefined {
    if (typeof schema !== 'object') return undefined;
    const ref = schema.$ref;
    if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) return ref.slice('#/components/schemas/'.length);
    return this.components.get(canonical(schema));
  }

  private link(name: string): string {
    return `[\`${name}\`](#${slug(`${name} (schema)`)})`;
  }

  /** Follows a local `$ref` (`#/components/schemas/Hold`); anything else is returned as it is. */
  resolve<T>(value: T): T {
    let current: unknown = value;
    const seen = new Set<string>();
    while (current && typeof current === 'object' && typeof (current as { $ref?: unknown }).$ref === 'string') {
      const ref = (current as { $ref: string }).$ref;
      if (!ref.startsWith('#/') || seen.has(ref)) break;
      seen.add(ref);
      let target: unknown = this.document;
      for (const part of ref.slice(2).split('/')) target = (target as Record<string, unknown> | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
      if (target === undefined) break;
      current = target;
    }
    return current as T;
  }

  /** The schema with allOf merged into one object schema. */
  private merged(schema: Schema): Record<string, unknown> {
    const s = this.resolve(schema);
    if (typeof s !== 'object') return {};
    const allOf = s.allOf as Schema[] | undefined;
    if (!Array.isArray(allOf)) return s;
    const out: Record<string, unknown> = { ...s };
    delete out.allOf;
    const properties: Record<string, Schema> = { ...((s.properties as Record<string, Schema>) ?? {}) };
    const required = new Set<string>((s.required as string[]) ?? []);
    for (const part of allOf) {
      const m = this.merged(part);
      Object.assign(properties, (m.properties as Record<string, Schema>) ?? {});
      for (const r of (m.required as string[]) ?? []) required.add(r);
      for (const key of ['type', 'description', 'additionalProperties', 'items', 'enum', 'anyOf', 'oneOf']) if (m[key] !== undefined && out[key] === undefined) out[key] = m[key];
    }
    if (Object.keys(properties).length > 0) out.properties = properties;
    if (required.size > 0) out.required = [...required];
    return out;
  }

  /** The alternatives of anyOf/oneOf, and whether null is one of them. */
  private variants(s: Record<string, unknown>): { options: Schema[]; nullable: boolean } {
    const list = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
    if (!Array.isArray(list)) return { options: [], nullable: false };
    const options: Schema[] = [];
    let nullable = false;
    for (const option of list) {
      const o = this.merged(option);
      if (o.type === 'null' || (o.const === null && Object.keys(o).length === 1)) nullable = true;
      else options.push(option);
    }
    return { options, nullable };
  }

  /** A short type: `string (date-time)`, `integer`, `array of object`, `"held" \| "expired"`, `string or null`. */
  typeOf(schema: Schema, depth = 0): string {
    if (schema === true || (typeof schema === 'object' && Object.keys(schema).length === 0)) return 'any';
    if (schema === false) return 'never';
    const component = this.componentOf(schema);
    if (component) return this.link(component);
    const s = this.merged(schema);
    if (depth > 4) return 'object';
    const { options, nullable } = this.variants(s);
    if (options.length > 0) {
      const kinds = [...new Set(options.map((o) => this.typeOf(o, depth + 1)))];
      return [...kinds, ...(nullable ? ['null'] : [])].join(' or ');
    }
    if (s.const !== undefined) return `\`${JSON.stringify(s.const)}\``;
    if (Array.isArray(s.enum)) return s.enum.map((v) => `\`${JSON.stringify(v)}\``).join(', ');
    const types = [s.type ?? (s.properties ? 'object' : s.items ? 'array' : undefined)].flat().filter((t): t is string => typeof t === 'string');
    if (types.length === 0) return 'any';
    return types
      .map((t) => {
        if (t === 'array') return s.items ? `array of ${this.typeOf(s.items as Schema, depth + 1)}` : 'array';
        if (t === 'string' && typeof s.format === 'string') return `string (${s.format})`;
        if (t === 'object' && !s.properties && s.additionalProperties && typeof s.additionalProperties === 'object' && Object.keys(s.additionalProperties).length > 0) {
          return `map of ${this.typeOf(s.additionalProperties as Schema, depth + 1)}`;
        }
        return t;
      })
      .join(' or ');
  }

  /** Limits, default and pattern, as words. */
  notes(schema: Schema): string {
    if (typeof schema !== 'object') return '';
    const s = this.merged(schema);
    const parts: string[] = [];
    if (typeof s.description === 'string') parts.push(s.description);
    const description = typeof s.description === 'string' ? s.description : '';
    const bound = (n: unknown) => (typeof n === 'number' && Math.abs(n) >= Number.MAX_SAFE_INTEGER ? undefined : n);
    const range = (lowest: unknown, highest: unknown, unit: string) => {
      const min = bound(lowest);
      const max = bound(highest);
      if ([min, max].every((n) => n === undefined || description.includes(String(n)))) return;
      if (min !== undefined && max !== undefined) parts.push(`${String(min)} to ${String(max)}${unit}`);
      else if (min !== undefined) parts.push(`at least ${String(min)}${unit}`);
      else if (max !== undefined) parts.push(`at most ${String(max)}${unit}`);
    };
    range(s.minimum, s.maximum, '');
    if (bound(s.exclusiveMinimum) !== undefined) parts.push(`more than ${String(s.exclusiveMinimum)}`);
    if (bound(s.exclusiveMaximum) !== undefined) parts.push(`less than ${String(s.exclusiveMaximum)}`);
    range(s.minLength, s.maxLength, ' characters');
    range(s.minItems, s.maxItems, ' items');
    if (typeof s.pattern === 'string' && s.format === undefined) parts.push(`pattern \`${s.pattern}\``);
    if (s.default !== undefined) parts.push(`default \`${JSON.stringify(s.default)}\``);
    const { options } = this.variants(s);
    if (options.length === 1) {
      const inner = this.notes(options[0]!);
      if (inner) parts.push(inner);
    }
    // The same fact twice (a range also written in the description) is said once.
    return [...new Set(parts)].join('; ');
  }

  /** Every field below `schema`, depth first, with dotted paths. */
  fields(schema: Schema, prefix = '', depth = 0, seen: ReadonlySet<string> = new Set()): Field[] {
    if (typeof schema !== 'object' || depth > 6) return [];
    const ref = typeof schema.$ref === 'string' ? schema.$ref : undefined;
    if (ref && seen.has(ref)) return [];
    const nextSeen = ref ? new Set([...seen, ref]) : seen;
    const s = this.merged(schema);
    const { options } = this.variants(s);
    if (options.length === 1) return this.fields(options[0]!, prefix, depth, nextSeen);
    if (options.length > 1) {
      // Several shapes: each one's fields, said to belong to it.
      return options.flatMap((option, i) =>
        this.fields(option, prefix, depth + 1, nextSeen).map((f) => ({ ...f, required: false, notes: [`variant ${i + 1} of ${options.length}`, f.notes].filter(Boolean).join('; ') })),
      );
    }
    const out: Field[] = [];
    const properties = (s.properties as Record<string, Schema> | undefined) ?? {};
    const required = new Set((s.required as string[] | undefined) ?? []);
    for (const [name, property] of Object.entries(properties)) {
      const path = prefix ? `${prefix}.${name}` : name;
      out.push({ path, type: this.typeOf(property), required: required.has(name), notes: this.notes(property) });
      out.push(...this.children(property, path, depth, nextSeen));
    }
    if (s.additionalProperties && typeof s.additionalProperties === 'object' && Object.keys(s.additionalProperties).length > 0 && Object.keys(properties).length === 0 && prefix === '') {
      out.push({ path: '<key>', type: this.typeOf(s.additionalProperties as Schema), required: false, notes: this.notes(s.additionalProperties as Schema) });
    }
    return out;
  }

  /** The fields inside one property: an object's, an array's items', a map's values'. */
  private children(property: Schema, path: string, depth: number, seen: ReadonlySet<string>): Field[] {
    if (typeof property !== 'object' || this.componentOf(property)) return [];
    const p = this.merged(property);
    const { options } = this.variants(p);
    if (options.length === 1 && this.componentOf(options[0]!)) return [];
    const inner = options.length === 1 ? this.merged(options[0]!) : p;
    const types = [inner.type].flat();
    if (inner.items && this.componentOf(inner.items as Schema)) return [];
    if (inner.items && (types.includes('array') || inner.type === undefined)) return this.fields(inner.items as Schema, `${path}[]`, depth + 1, seen);
    if (inner.properties || inner.allOf || options.length > 1) return this.fields(options.length === 1 ? options[0]! : property, path, depth + 1, seen);
    const values = inner.additionalProperties;
    if (values && typeof values === 'object' && Object.keys(values).length > 0) return this.fields(values as Schema, `${path}.<key>`, depth + 1, seen);
    return [];
  }

  fieldTable(fields: Field[], withRequired: boolean): string[] {
    if (fields.length === 0) return [];
    const head = withRequired ? ['| field | type | required | notes |', '|---|---|---|---|'] : ['| field | type | notes |', '|---|---|---|'];
    return [
      ...head,
      ...fields.map((f) =>
        withRequired
          ? `| \`${cell(f.path)}\` | ${cell(f.type)} | ${f.required ? 'yes' : ''} | ${cell(f.notes)} |`
          : `| \`${cell(f.path)}\` | ${cell(f.type)} | ${cell(f.notes)} |`,
      ),
    ];
  }

  /** Who may call it: open, or the document's security scheme. */
  access(operation: Operation): string {
    const security = operation.security ?? this.document.security ?? [];
    if (security.length === 0 || security.every((requirement) => Object.keys(requirement).length === 0)) return 'Open: no token.';
    const schemes = this.document.components?.securitySchemes ?? {};
    const names = security.flatMap((requirement) => Object.keys(requirement));
    const described = names.map((name) => {
      const scheme = schemes[name];
      return scheme?.type === 'http' && scheme.scheme === 'bearer' ? '`Authorization: Bearer <token>`' : `\`${name}\``;
    });
    return `Needs ${[...new Set(described)].join(' or ')}.`;
  }

  content(content: MediaTypes | undefined, withRequired: boolean): string[] {
    const out: string[] = [];
    for (const [mediaType, media] of Object.entries(content ?? {})) {
      const schema = media.schema ?? {};
      const component = this.componentOf(schema);
      if (component) {
        out.push(`\`${mediaType}\`: ${this.link(component)}.`, '');
        continue;
      }
      const fields = this.fields(schema);
      if (fields.length > 0) {
        out.push(`\`${mediaType}\`:`, '', ...this.fieldTable(fields, withRequired), '');
      } else {
        const notes = this.notes(schema);
        out.push(`\`${mediaType}\`: ${this.typeOf(schema)}${notes ? ` (${notes})` : ''}.`, '');
      }
    }
    return out;
  }

  operation(path: string, method: string, operation: Operation): string[] {
    const out: string[] = [`### ${method.toUpperCase()} ${path}`, ''];
    if (operation.deprecated) out.push('**Deprecated.**', '');
    if (operation.summary) out.push(sentence(operation.summary), '');
    if (operation.description && operation.description !== operation.summary) out.push(operation.description, '');
    out.push(this.access(operation), '');

    const parameters = (operation.parameters ?? []).map((p) => this.resolve(p));
    if (parameters.length > 0) {
      out.push('Parameters:', '', '| name | in | type | required | notes |', '|---|---|---|---|---|');
      for (const p of parameters) {
        const notes = [p.description, p.schema ? this.notes(p.schema) : ''].filter(Boolean).join('; ');
        out.push(`| \`${cell(p.name)}\` | ${p.in} | ${cell(p.schema ? this.typeOf(p.schema) : 'string')} | ${p.required ? 'yes' : ''} | ${cell(notes)} |`);
      }
      out.push('');
    }

    const body = operation.requestBody ? this.resolve(operation.requestBody) : undefined;
    if (body) {
      out.push(`Request body${body.required ? '' : ' (optional)'}${body.description ? `: ${body.description}` : ''}:`, '');
      out.push(...this.content(body.content, true));
    }

    const all = Object.entries(operation.responses ?? {});
    // The refusals most routes share are told once, under Refusals; a route lists their statuses.
    const shared = all.filter(([status, raw]) => this.common.has(refusalKey(status, this.resolve(raw)))).map(([status]) => status);
    const responses = all.filter(([status]) => !shared.includes(status));
    if (all.length > 0) {
      out.push('Responses:', '');
      for (const [status, raw] of responses) {
        const response = this.resolve(raw);
        const head = `- **${status}**${response.description ? `: ${response.description}` : ''}`;
        const inner = this.content(response.content, false);
        // A one-line answer (a named schema, a plain string) stays on the status's line.
        if (inner.length === 2 && !inner[0]!.endsWith(':')) out.push(`${head} (${inner[0]!.replace(/\.$/, '')})`);
        else out.push(head, ...(inner.length > 0 ? ['', ...inner.map((line) => (line ? `  ${line}` : line))] : []));
      }
      if (shared.length > 0) out.push(`- **${shared.join(', ')}**: the [refusals](#refusals) most routes share ([\`Error\`](#error-schema))`);
      out.push('');
    }
    return out;
  }

  render(): string {
    const { document } = this;
    const operations: Array<{ path: string; method: string; operation: Operation; tag: string }> = [];
    for (const [path, item] of Object.entries(document.paths)) {
      for (const method of METHODS) {
        const operation = item[method] as Operation | undefined;
        if (operation) operations.push({ path, method, operation, tag: operation.tags?.[0] ?? 'other' });
      }
    }
    const tags = [...new Set(operations.map((o) => o.tag))];
    const out: string[] = [
      '# HTTP API reference',
      '',
      generatedNotice('the OpenAPI document the API serves at `GET /v1/openapi.json`'),
      '',
      `${document.info.title} ${document.info.version}, OpenAPI ${document.openapi}. ${document.info.description ?? ''}`.trim(),
      '',
      'Every route under `/v1` needs `Authorization: Bearer <token>` (a token of',
      'the role the route needs: [operator access](access.md)) unless it says',
      'otherwise. Request bodies are JSON (`content-type: application/json`).',
      'A field marked required must be given; an unknown field is a 400 naming it.',
      '[Operations](operations.md#errors) lists every error code.',
      '',
      '## Routes',
      '',
    ];
    for (const tag of tags) {
      out.push(`- ${tag}: ${operations.filter((o) => o.tag === tag).map((o) => `[${o.method.toUpperCase()} ${o.path}](#${slug(`${o.method} ${o.path}`)})`).join(', ')}`);
    }
    out.push('', ...this.refusals());
    for (const tag of tags) {
      out.push(`## ${tag[0]!.toUpperCase()}${tag.slice(1)}`, '');
      for (const o of operations.filter((x) => x.tag === tag)) out.push(...this.operation(o.path, o.method, o.operation));
    }
    const schemas = Object.entries(document.components?.schemas ?? {});
    if (schemas.length > 0) {
      out.push('## Schemas', '', 'Shapes used by more than one route.', '');
      for (const [name, schema] of schemas) {
        out.push(`### ${name} (schema)`, '');
        const notes = this.notes(schema);
        if (notes) out.push(sentence(notes), '');
        const fields = this.fields(this.merged(schema));
        out.push(...(fields.length > 0 ? this.fieldTable(fields, true) : [`${this.typeOf(this.merged(schema))}.`]), '');
      }
    }
    return out.join('\n').replace(/\n{3,}/g, '\n\n');
  }
}

/** A refusal as the routes give it: its status and description (in the Error shape, as every refusal is). */
function refusalKey(status: string, response: { description?: string }): string {
  return `${status} ${response.description ?? ''}`;
}

/** JSON with object keys sorted, so two equal schemas compare equal. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function sentence(text: string): string {
  const first = text[0]!.toUpperCase() + text.slice(1);
  return /[.!?]$/.test(first) ? first : `${first}.`;
}

export function renderApiReference(document: OpenApiDocument): string {
  return new Renderer(document).render();
}
