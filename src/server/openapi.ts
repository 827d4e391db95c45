import swagger from '@fastify/swagger';
import type { OpenAPIV3_1 } from 'openapi-types';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { packageVersion } from '../runtime/version.js';
import { json, openAnswers, type ZodApp } from './shapes/common.js';

/**
 * The HTTP contract as an OpenAPI 3.1 document, served at
 * `GET /v1/openapi.json`. Nothing here describes a route: @fastify/swagger
 * collects each route's own schemas (request and response, errors
 * included) as it is registered, and fastify-type-provider-zod turns the
 * zod schemas into JSON Schema. Shapes with an id (Hold, Intent, Error,
 * Timestamp, ...) become components. test/server/openapi.test.ts checks
 * the document is valid and covers every route; test/helpers/server.ts
 * checks every request and answer of the API tests against it.
 */
export function registerOpenApi(app: FastifyInstance): void {
  void app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'leasehold',
        version: packageVersion(),
        description:
          'Durable hold expiry and rate-limited email notification. Every refusal is {"error":{"code","message"}} (the Error component). ' +
          'A known path asked with a method it does not take answers 405 with Allow.',
      },
      servers: [{ url: '/' }],
      security: [{ bearer: [] }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'LEASEHOLD_API_TOKEN or a token of LEASEHOLD_API_TOKENS_FILE' } } },
    },
    transform: (document) => {
      const transformed = jsonSchemaTransform(document);
      const schema = transformed.schema as Record<string, unknown> | undefined;
      if (schema && !schema['hide']) {
        schema['operationId'] ??= operationId(document.route.method, transformed.url);
        // @fastify/swagger marks every body required; one the route takes or leaves (pause, prune) is not.
        const body = document.schema?.body as z.ZodType | undefined;
        if (body && body.safeParse(undefined).success) schema[OPTIONAL_BODY] = true;
      }
      return transformed;
    },
    transformObject: (document) =>
      optionalBodies(pruneComponents(jsonSchemaTransformObject(document) as Document)) as Partial<OpenAPIV3_1.Document>,
  });
}

type Document = { components?: { schemas?: Record<string, unknown> }; paths?: Record<string, Record<string, Record<string, unknown>>> } & Record<string, unknown>;

/** An operation extension the transform sets and optionalBodies() turns into `requestBody.required: false`. */
const OPTIONAL_BODY = 'x-leasehold-optional-body';

function optionalBodies(document: Document): Document {
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      if (!operation[OPTIONAL_BODY]) continue;
      delete operation[OPTIONAL_BODY];
      if (operation['requestBody']) (operation['requestBody'] as { required: boolean }).required = false;
    }
  }
  return document;
}

/**
 * Every shape with an id gets an input and an output component; keep the
 * ones the document refers to (an answer's Hold, not a HoldInput no
 * request takes).
 */
function pruneComponents(document: Document): Document {
  const schemas = document.components?.schemas;
  if (!schemas) return document;
  const used = new Set<string>();
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (value === null || typeof value !== 'object') return;
    for (const [key, child] of Object.entries(value)) {
      if (key === '$ref' && typeof child === 'string' && child.startsWith('#/components/schemas/')) {
        const name = child.slice('#/components/schemas/'.length);
        if (!used.has(name)) {
          used.add(name);
          visit(schemas[name]);
        }
      } else visit(child);
    }
  };
  visit({ ...document, components: { ...document.components, schemas: undefined } });
  return { ...document, components: { ...document.components, schemas: Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name))) } };
}

/** getHoldsById, postDeliveryPause, ...: stable, from the method and the path. */
function operationId(method: string | string[], path: string): string {
  const words = path
    .replace(/:([A-Za-z]+)/g, '{$1}')
    .replace(/^\/v1\//, '')
    .replace(/^\//, '')
    .split(/[/.-]/)
    .filter(Boolean)
    .map((part) => (part.startsWith('{') ? `by ${part.slice(1, -1)}` : part))
    .join(' ')
    .split(' ');
  return [method].flat()[0]!.toLowerCase() + words.map((word) => word[0]!.toUpperCase() + word.slice(1)).join('');
}

/**
 * `GET /v1/openapi.json`, open like /healthz: a contract is not a secret,
 * and a client generator fetches it before anyone has handed it a token.
 * Every route it describes still needs one.
 */
export function openApiRoutes(app: ZodApp): void {
  app.get(
    '/openapi.json',
    {
      schema: { summary: 'this document (no token needed)', tags: ['operations'], security: [], response: openAnswers({ 200: json(z.record(z.string(), z.unknown()), 'OpenAPI 3.1') }) },
    },
    async () => app.swagger() as unknown as Record<string, unknown>,
  );
}
