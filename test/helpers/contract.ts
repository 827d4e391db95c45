import { createRequire } from 'node:module';
import type { ValidateFunction } from 'ajv';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';

/**
 * The served OpenAPI document as a contract test: every request a test
 * sends through the API harness, and every answer, is checked against
 * `GET /v1/openapi.json` with a JSON Schema 2020-12 validator (ajv), the
 * way a client generated from the document would see them. Any drift
 * between what a route answers and what the document says fails the test
 * that made the call:
 *
 * - an answer with a status the operation does not list, or a body that
 *   does not fit the listed schema;
 * - a request the API accepted (2xx) whose path parameters, query or body
 *   the document would refuse;
 * - an answer to an unknown route (404, 405) that is not the Error component.
 */

// ajv and ajv-formats are CommonJS; their default export is the module itself.
const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js').default;
const addFormats = require('ajv-formats') as typeof import('ajv-formats').default;

type Schema = Record<string, unknown>;
interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema: Schema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}

interface Route {
  template: string;
  pattern: RegExp;
  names: string[];
  /** Static segments count: '/v1/webhooks/resend' wins over '/v1/webhooks/{account}'. */
  specificity: number;
  operations: Record<string, Operation>;
}

const pointer = (...parts: string[]) => parts.map((part) => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

export class ContractValidator {
  private readonly routes: Route[];
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, unicodeRegExp: false });
  /** Query values are strings on the wire; the document types them (limit: integer). */
  private readonly coercing = new Ajv2020({ strict: false, allErrors: true, unicodeRegExp: false, coerceTypes: true });
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(private readonly document: Document) {
    for (const ajv of [this.ajv, this.coercing]) {
      addFormats(ajv);
      ajv.addSchema({ $id: 'openapi.json', components: document.components ?? {} } as Schema);
    }
    this.routes = Object.entries(document.paths)
      .map(([template, operations]) => {
        const names: string[] = [];
        const source = template
          .split('/')
          .map((segment) => {
            const name = /^\{(.+)\}$/.exec(segment)?.[1];
            if (!name) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
            names.push(name);
            return '([^/]*)';
          })
          .join('/');
        return { template, pattern: new RegExp(`^${source}$`), names, specificity: template.split('/').length - names.length, operations };
      })
      .sort((a, b) => b.specificity - a.specificity);
  }

  /** Every problem with one exchange, in words; empty when it keeps the contract. */
  check(request: { method: string; url: string; body?: unknown; contentType?: string }, response: LightMyRequestResponse): string[] {
    const method = request.method.toLowerCase();
    // Prefixed, not resolved: a path like `//x` is a path here, not a host.
    const url = new URL(`http://api${request.url.startsWith('/') ? '' : '/'}${request.url}`);
    const route = this.routes.find((candidate) => candidate.pattern.test(url.pathname));
    const operation = route?.operations[method];
    const label = `${request.method} ${url.pathname}`;
    if (!route || !operation) {
      // Not an operation of the document: only the API's own refusals may answer it, in the Error shape.
      if (!url.pathname.startsWith('/v1') || response.statusCode < 400) return [];
      return this.validate(`${label} ${response.statusCode}`, this.errorSchema(), parseJson(response.body));
    }
    const problems: string[] = [];
    const declared = operation.responses[String(response.statusCode)] ?? operation.responses[`${String(response.statusCode)[0]}XX`];
    if (!declared) {
      problems.push(`${label} answered ${response.statusCode}, which ${route.template} ${method} does not list (it lists ${Object.keys(operation.responses).join(', ')})`);
    } else {
      const mediaType = String(response.headers['content-type'] ?? '').split(';')[0]!.trim();
      const content = declared.content;
      if (content && mediaType === 'application/json') {
        const key = content['application/json'] ? 'application/json' : undefined;
        if (!key) problems.push(`${label} ${response.statusCode} answered JSON, which the document does not list`);
        else {
          const ref = pointer('paths', route.template, method, 'responses', String(response.statusCode) in operation.responses ? String(response.statusCode) : `${String(response.statusCode)[0]}XX`, 'content', key, 'schema');
          problems.push(...this.validate(`${label} ${response.statusCode} answer`, ref, parseJson(response.body)));
        }
      } else if (content && response.body.length > 0 && !Object.keys(content).includes(mediaType) && !(mediaType === '' && response.statusCode === 204)) {
        problems.push(`${label} ${response.statusCode} answered ${mediaType || 'no content type'}, the document lists ${Object.keys(content).join(', ')}`);
      }
    }
    if (response.statusCode >= 200 && response.statusCode < 300) problems.push(...this.checkRequest(label, route, method, operation, url, request));
    return problems;
  }

  /** What the API accepted must be what the document says it accepts. */
  private checkRequest(label: string, route: Route, method: string, operation: Operation, url: URL, request: { body?: unknown; contentType?: string }): string[] {
    const problems: string[] = [];
    const values = route.pattern.exec(url.pathname)!.slice(1);
    const parameters = operation.parameters ?? [];
    parameters.forEach((parameter, index) => {
      const at = pointer('paths', route.template, method, 'parameters', String(index), 'schema');
      if (parameter.in === 'path') {
        const value = decodeURIComponent(values[route.names.indexOf(parameter.name)] ?? '');
        problems.push(...this.validate(`${label} path parameter ${parameter.name}`, at, value, this.coercing));
      } else if (parameter.in === 'query') {
        const given = url.searchParams.getAll(parameter.name);
        if (given.length === 0) {
          if (parameter.required) problems.push(`${label}: accepted without the required query parameter ${parameter.name}`);
          return;
        }
        problems.push(...this.validate(`${label} query parameter ${parameter.name}`, at, given.length === 1 ? given[0] : given, this.coercing));
      }
    });
    // A query parameter the document does not list is not checked: a route with a query schema refuses it
    // (400, strict), and one without ignores it, which OpenAPI allows.
    // As the app's JSON parser (server/app.ts): a body of only whitespace is no body.
    const parsed = request.body === undefined || (typeof request.body === 'string' && request.body.trim() === '') ? undefined : typeof request.body === 'string' ? parseJson(request.body) : request.body;
    // The API reads a JSON `null` body as no body (server/validation.ts).
    const body = parsed === null ? undefined : parsed;
    if (body !== undefined && operation.requestBody) {
      const ref = pointer('paths', route.template, method, 'requestBody', 'content', 'application/json', 'schema');
      if (operation.requestBody.content['application/json']) problems.push(...this.validate(`${label} request body`, ref, body));
    } else if (body === undefined && operation.requestBody?.required) {
      problems.push(`${label}: accepted without the body the document requires`);
    }
    return problems;
  }

  private errorSchema(): string {
    return 'openapi.json#/components/schemas/Error';
  }

  private validate(label: string, ref: string, value: unknown, ajv = this.ajv): string[] {
    const id = ref.startsWith('openapi.json#') ? ref : `openapi.json#/${ref}`;
    const key = `${ajv === this.ajv ? 'strict' : 'coercing'} ${id}`;
    let validate = this.compiled.get(key);
    if (!validate) {
      validate = ajv.compile(this.resolve(id));
      this.compiled.set(key, validate);
    }
    // Coercion writes into the value: check a copy.
    if (validate(structuredClone(value))) return [];
    return [`${label} does not fit the document: ${ajv.errorsText(validate.errors, { separator: '; ' })}`];
  }

  /** The schema at a pointer into the document, its component references left for ajv to resolve. */
  private resolve(id: string): Schema {
    const path = id.slice('openapi.json#/'.length).split('/').map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'));
    let node: unknown = path[0] === 'components' ? { components: this.document.components } : this.document;
    for (const part of path) node = (node as Record<string, unknown>)[part];
    if (node === undefined) throw new Error(`the document has nothing at ${id}`);
    return rewriteRefs(node as Schema);
  }
}

/** `#/components/schemas/X` inside a copied schema points at the document's components. */
function rewriteRefs(node: Schema): Schema {
  return JSON.parse(JSON.stringify(node).replaceAll('"#/components/', '"openapi.json#/components/')) as Schema;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The options of an `app.inject(options)` call, as the contract check reads them. */
export function injected(options: InjectOptions | string): { method: string; url: string; body?: unknown } {
  if (typeof options === 'string') return { method: 'GET', url: options };
  const url = typeof options.url === 'string' ? options.url : String(options.path ?? '/');
  const query = options.query ? `${url.includes('?') ? '&' : '?'}${new URLSearchParams(options.query as Record<string, string>)}` : '';
  return { method: String(options.method ?? 'GET'), url: url + query, body: options.payload ?? options.body };
}
