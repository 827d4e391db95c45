import type { FastifySchemaCompiler } from 'fastify';
import type { z } from 'zod';
import { toValidationError } from '../model/hold-input.js';

export { serializerCompiler, isResponseSerializationError } from 'fastify-type-provider-zod';

/**
 * Requests are checked by the zod schema each route declares (params,
 * querystring, body), before the handler runs and after the token check.
 * A refusal is the ValidationError every input error of leasehold is (the
 * field named, in our words: `required`, `unknown field; did you mean X?`),
 * which server/errors.ts answers as a 400 in the one error shape. Answers
 * go out through the same schemas (`serializerCompiler`): a shape they do
 * not fit is our fault, a 500 logged with the zod issues (never the values).
 */
export const validatorCompiler: FastifySchemaCompiler<z.ZodType> =
  ({ schema, httpPart }) =>
  (given) => {
    // No body, and a JSON `null` body, are both "no body": a route whose body is optional takes either.
    const data = httpPart === 'body' && given === null ? undefined : given;
    const parsed = schema.safeParse(data);
    if (parsed.success) return { value: parsed.data };
    return { error: toValidationError(parsed.error, '', { schema, input: data }) };
  };
