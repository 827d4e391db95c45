/**
 * Array parameters in PostgreSQL's binary array format (the one
 * `array_recv` reads), for the lanes' statements that send a round's values
 * as one array per column (`unnest($1::text[], ...)`).
 *
 * node-postgres sends a JavaScript array as a text literal
 * (`{"a","b\"c"}`): it escapes every element with two regular expressions
 * and builds one string of them all, and the server parses that literal
 * back character by character. For a round of 500 rendered messages that
 * is a megabyte of HTML escaped, copied and parsed again. A Buffer
 * parameter goes in binary instead: each element is its length and its
 * bytes, written once and read without parsing (in the tuned drain, the
 * message store in binary cut the CPU per email by about 5 %; see
 * BENCHMARKS.md).
 *
 * Each function answers one column; a statement casts the parameter to the
 * same type (`$1::text[]`), so the element type here must match that cast.
 * Null and undefined elements are SQL NULLs.
 */

/** Element type OIDs (pg_type), as array_recv checks them against the cast. */
const OID = { bool: 16, int4: 23, text: 25, float8: 701 } as const;

/** The header of a one-dimensional array: ndim, has-nulls flag, element type, length, lower bound 1. */
const HEADER_BYTES = 20;

function encode<T>(
  oid: number,
  values: readonly (T | null | undefined)[],
  /** Bytes of one non-null element. */
  sizeOf: (value: T, index: number) => number,
  /** Write one non-null element at `offset`; answers the bytes written. */
  write: (buffer: Buffer, value: T, offset: number, index: number) => number,
): Buffer {
  let size = HEADER_BYTES;
  let hasNulls = 0;
  const sizes = new Array<number>(values.length);
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value === null || value === undefined) {
      sizes[i] = -1;
      hasNulls = 1;
      size += 4;
    } else {
      sizes[i] = sizeOf(value, i);
      size += 4 + sizes[i]!;
    }
  }
  const buffer = Buffer.allocUnsafe(size);
  buffer.writeInt32BE(1, 0);
  buffer.writeInt32BE(hasNulls, 4);
  buffer.writeUInt32BE(oid, 8);
  buffer.writeInt32BE(values.length, 12);
  buffer.writeInt32BE(1, 16);
  let offset = HEADER_BYTES;
  for (let i = 0; i < values.length; i++) {
    offset = buffer.writeInt32BE(sizes[i]!, offset);
    if (sizes[i]! >= 0) offset += write(buffer, values[i] as T, offset, i);
  }
  return buffer;
}

/** A `text[]` parameter. */
export function textArray(values: readonly (string | null | undefined)[]): Buffer {
  return encode<string>(
    OID.text,
    values,
    (value, i) => {
      if (typeof value !== 'string') throw new TypeError(`text[] element ${i} is a ${typeof value}, not a string`);
      // A NUL, which text cannot hold, is refused by the server as in a text literal.
      return Buffer.byteLength(value, 'utf8');
    },
    (buffer, value, offset) => buffer.write(value, offset, 'utf8'),
  );
}

/**
 * An array of a type whose elements all take `bytes`: `fits` says whether
 * a value is one (else a TypeError names the element and what it should
 * be), `write` writes it at an offset.
 */
function fixedWidth<T>(oid: number, bytes: number, type: string, should: string, fits: (value: T) => boolean, write: (buffer: Buffer, value: T, offset: number) => void) {
  return (values: readonly (T | null | undefined)[]): Buffer =>
    encode<T>(
      oid,
      values,
      (value, i) => {
        if (!fits(value)) throw new TypeError(`${type}[] element ${i} is ${typeof value === 'number' ? value : `a ${typeof value}`}, not ${should}`);
        return bytes;
      },
      (buffer, value, offset) => {
        write(buffer, value, offset);
        return bytes;
      },
    );
}

/** An `int[]` (int4) parameter: each element a whole number within 32 bits. */
export const int4Array = fixedWidth<number>(
  OID.int4,
  4,
  'int',
  'a 32-bit integer',
  (value) => Number.isInteger(value) && value >= -2_147_483_648 && value <= 2_147_483_647,
  (buffer, value, offset) => buffer.writeInt32BE(value, offset),
);

/** A `bool[]` parameter. */
export const boolArray = fixedWidth<boolean>(OID.bool, 1, 'bool', 'a boolean', (value) => typeof value === 'boolean', (buffer, value, offset) => buffer.writeUInt8(value ? 1 : 0, offset));

/** A `float8[]` parameter. */
export const float8Array = fixedWidth<number>(OID.float8, 8, 'float8', 'a number', (value) => typeof value === 'number', (buffer, value, offset) => buffer.writeDoubleBE(value, offset));
