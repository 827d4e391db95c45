import type { Queryable } from '../db/pool.js';
import { ident } from '../db/pool.js';
import { textArray } from '../db/binary-arrays.js';
import type { RenderedMessage } from '../model/message.js';

/**
 * Every statement on email_messages: the rendered message of an intent,
 * snapshotted at its first lease so that every attempt sends it byte for
 * byte (migrations/0006_email_messages.sql). Batches go through arrays,
 * the stored bodies through binary ones (db/binary-arrays.ts).
 */

export interface StoredMessage extends RenderedMessage {
  intentId: string;
  renderedAt: Date;
}

interface MessageRow {
  intent_id: string;
  subject: string;
  text_body: string;
  html_body: string;
  from_address: string;
  reply_to: string | null;
  headers: Record<string, string>;
  template: string;
  template_locale: string;
  locale: string;
  time_zone: string;
  template_version: string;
  rendered_at: Date;
}

const COLUMNS = `intent_id, subject, text_body, html_body, from_address, reply_to, headers, template, template_locale,
  locale, time_zone, template_version, rendered_at`;

function fromRow(row: MessageRow): StoredMessage {
  return {
    intentId: row.intent_id,
    subject: row.subject,
    text: row.text_body,
    html: row.html_body,
    from: row.from_address,
    replyTo: row.reply_to,
    headers: row.headers,
    template: row.template,
    templateLocale: row.template_locale,
    locale: row.locale,
    timeZone: row.time_zone,
    templateVersion: row.template_version,
    renderedAt: row.rendered_at,
  };
}

/**
 * For the outbox's lease statement (tables/outbox.ts): the stored message of
 * the intent joined as `m`, its columns prefixed `m_`, read back with
 * `messageFromLeaseRow`. A lease thus brings each intent's snapshot along
 * instead of a statement of its own.
 */
export const messagesJoinForLease = (s: string, intentId: string): string =>
  `LEFT JOIN ${s}.email_messages m ON m.intent_id = ${intentId}`;
const COLUMN_NAMES = COLUMNS.split(',').map((c) => c.trim());
export const MESSAGE_LEASE_COLUMNS = COLUMN_NAMES.map((c) => `m.${c} AS m_${c}`).join(', ');

export function messageFromLeaseRow(row: Record<string, unknown>): StoredMessage | null {
  if (row['m_intent_id'] === null || row['m_intent_id'] === undefined) return null;
  // Read once per leased intent: the column names are split once, above.
  const unprefixed: Record<string, unknown> = {};
  for (const c of COLUMN_NAMES) unprefixed[c] = row[`m_${c}`];
  return fromRow(unprefixed as unknown as MessageRow);
}

/**
 * Store newly rendered messages unless the intent already has one (another
 * worker, whose lease expired mid-round, may have stored its rendering first:
 * the first stored wins). Returns the messages this statement stored, built
 * from the input and the stored `rendered_at` and headers: the bodies go to
 * the server once and do not come back. An intent missing from the answer already had
 * a message (or a competing insert committed while this one ran):
 * `messagesGetMany` reads it.
 */
export async function messagesStore(
  db: Queryable,
  schema: string,
  messages: Array<RenderedMessage & { intentId: string }>,
): Promise<StoredMessage[]> {
  const s = ident(schema);
  // Binary arrays (db/binary-arrays.ts): the bodies are neither escaped nor parsed again.
  const col = (f: (m: RenderedMessage & { intentId: string }) => string | null) => textArray(messages.map(f));
  const { rows } = await db.query<{ intent_id: string; rendered_at: Date; headers: Record<string, string> }>(
    `INSERT INTO ${s}.email_messages (${COLUMNS})
     SELECT intent_id, subject, text_body, html_body, from_address, reply_to, headers::jsonb, template, template_locale,
            locale, time_zone, template_version, now()
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                   $9::text[], $10::text[], $11::text[], $12::text[])
         AS i(intent_id, subject, text_body, html_body, from_address, reply_to, headers, template, template_locale,
              locale, time_zone, template_version)
     ON CONFLICT (intent_id) DO NOTHING
     RETURNING intent_id, rendered_at, headers`,
    [
      col((m) => m.intentId),
      col((m) => m.subject),
      col((m) => m.text),
      col((m) => m.html),
      col((m) => m.from),
      col((m) => m.replyTo),
      col((m) => JSON.stringify(m.headers)),
      col((m) => m.template),
      col((m) => m.templateLocale),
      col((m) => m.locale),
      col((m) => m.timeZone),
      col((m) => m.templateVersion),
    ],
  );
  const byId = new Map(messages.map((m) => [m.intentId, m]));
  // The headers come back as jsonb orders them, as every later attempt reads them.
  return rows.map((row) => ({ ...byId.get(row.intent_id)!, intentId: row.intent_id, headers: row.headers, renderedAt: row.rendered_at }));
}

export async function messagesGetMany(db: Queryable, schema: string, intentIds: string[]): Promise<StoredMessage[]> {
  const { rows } = await db.query<MessageRow>(
    `SELECT ${COLUMNS} FROM ${ident(schema)}.email_messages WHERE intent_id = ANY ($1::text[])`,
    [intentIds],
  );
  return rows.map(fromRow);
}

/** What operators see of a stored message (the trace, the API): never the bodies. */
export interface MessageSummary {
  subject: string;
  from: string;
  replyTo: string | null;
  template: string;
  templateLocale: string;
  locale: string;
  timeZone: string;
  templateVersion: string;
  renderedAt: Date;
}

export async function messagesSummary(db: Queryable, schema: string, intentId: string): Promise<MessageSummary | null> {
  const { rows } = await db.query<MessageRow>(
    `SELECT subject, from_address, reply_to, template, template_locale, locale, time_zone, template_version, rendered_at
       FROM ${ident(schema)}.email_messages WHERE intent_id = $1`,
    [intentId],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    subject: row.subject,
    from: row.from_address,
    replyTo: row.reply_to,
    template: row.template,
    templateLocale: row.template_locale,
    locale: row.locale,
    timeZone: row.time_zone,
    templateVersion: row.template_version,
    renderedAt: row.rendered_at,
  };
}

/**
 * Drop the snapshot of a finished intent, so its replay renders anew. Never
 * of a pending one: that would change a message in the middle of its retries.
 * Returns whether there was one.
 */
export async function messagesDiscardFinished(db: Queryable, schema: string, intentId: string): Promise<boolean> {
  const s = ident(schema);
  const { rowCount } = await db.query(
    `DELETE FROM ${s}.email_messages m USING ${s}.email_outbox o
      WHERE m.intent_id = $1 AND o.id = m.intent_id AND o.state <> 'pending'`,
    [intentId],
  );
  return (rowCount ?? 0) > 0;
}
