import { generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';

/**
 * A self-signed X.509 certificate made with node:crypto alone (it can make
 * keys and signatures but not certificates): a minimal DER encoder for one
 * v3 certificate with a subjectAltName, so tests can serve TLS and sign
 * like AWS without openssl or the network.
 */

const length = (n: number): Buffer => {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
};
const tlv = (tag: number, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
};
const seq = (...items: Buffer[]) => tlv(0x30, ...items);
const set = (...items: Buffer[]) => tlv(0x31, ...items);
/**
 * A non-negative DER INTEGER: minimal, as DER requires (a random serial that
 * began with a zero byte was "illegal padding" to OpenSSL, about one cert in
 * 500), with a zero byte in front only when the high bit is set.
 */
function integer(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const minimal = bytes.subarray(start);
  return tlv(0x02, minimal[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), minimal]) : minimal);
}
const oid = (dotted: string): Buffer => {
  const [a, b, ...rest] = dotted.split('.').map(Number) as [number, number, ...number[]];
  const out = [40 * a + b];
  for (const n of rest) {
    const chunk: number[] = [n & 0x7f];
    for (let v = n >> 7; v > 0; v >>= 7) chunk.unshift((v & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
};
const utf8 = (s: string) => tlv(0x0c, Buffer.from(s, 'utf8'));
const time = (d: Date) => tlv(0x17, Buffer.from(d.toISOString().replace(/[-:T]/g, '').slice(2, 14) + 'Z'));
const NULL = Buffer.from([0x05, 0x00]);
const TRUE = tlv(0x01, Buffer.from([0xff]));

const SHA256_WITH_RSA = seq(oid('1.2.840.113549.1.1.11'), NULL);

export interface SelfSigned {
  certPem: string;
  keyPem: string;
  privateKey: KeyObject;
}

export function selfSignedCertificate(hostname: string): SelfSigned {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const name = seq(set(seq(oid('2.5.4.3'), utf8(hostname))));
  const now = Date.now();
  const tbs = seq(
    tlv(0xa0, integer(Buffer.from([2]))), // v3
    integer(randomBytes(8)),
    SHA256_WITH_RSA,
    name,
    seq(time(new Date(now - 3600_000)), time(new Date(now + 24 * 3600_000))),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    tlv(
      0xa3,
      seq(
        seq(oid('2.5.29.19'), TRUE, tlv(0x04, seq(TRUE))), // basicConstraints: critical, CA:TRUE (it is its own trust anchor)
        seq(oid('2.5.29.17'), tlv(0x04, seq(tlv(0x82, Buffer.from(hostname, 'ascii'))))), // subjectAltName DNS
      ),
    ),
  );
  const der = seq(tbs, SHA256_WITH_RSA, tlv(0x03, Buffer.from([0]), sign('sha256', tbs, privateKey)));
  const certPem = `-----BEGIN CERTIFICATE-----\n${der.toString('base64').match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;
  return { certPem, keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, privateKey };
}
