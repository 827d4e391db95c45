/** A rendered message: everything a send needs except the recipient and the idempotency key. */
export interface RenderedMessage {
  template: string;
  /** The template directory used, e.g. `de` for a hold in `de-CH`. */
  templateLocale: string;
  /** Hash of every file that shaped this message. */
  templateVersion: string;
  /** Set when a tenant's own template (`tenants/<tenant>/`) was used; not stored (the intent has the tenant, the version tells the files apart). */
  templateTenant?: string;
  /** Locale and zone the times were formatted in. */
  locale: string;
  timeZone: string;
  subject: string;
  text: string;
  html: string;
  from: string;
  replyTo: string | null;
  /** Includes X-Leasehold-Intent-Id. */
  headers: Record<string, string>;
}
