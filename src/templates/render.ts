import type { Template } from 'liquidjs';
import { LeaseholdError } from '../errors.js';
import type { RenderedMessage } from '../model/message.js';
import { renderWith, type Engines } from './engine.js';
import { localTime } from './locale.js';
import { remaining } from './remaining.js';
import { PART_FILES, TENANTS_DIR, type Part } from './source.js';

/**
 * Rendering one parsed template into one message: the variables a template
 * sees, the three parts, the subject's rules and the headers. Which
 * template renders (tenant, locale, fallback) is templates.ts's choice.
 */

/** Header naming the intent on every message, so a recipient's side can recognise duplicates. */
export const INTENT_HEADER = 'X-Leasehold-Intent-Id';

/** What a template is rendered from: the stored facts of one intent and its hold. */
export interface RenderInput {
  intentId: string;
  holdId: string;
  metadata: Record<string, unknown>;
  expiresAt: Date;
  expiredAt: Date | null;
  /** When the hold was confirmed (the confirmation email's `confirmedAt`); null or absent while it is not. */
  confirmedAt?: Date | null;
  /** The moment of rendering, which `remaining` counts from. Default: now. */
  now?: Date;
  /** Sender used when the template's meta names none (EMAIL_FROM). */
  from: string;
  /** The hold's tenant: its own templates (`tenants/<tenant>/`) are used where it has them. Default '' (shared only). */
  tenant?: string;
}

/**
 * A template could not be rendered. `broken` means the template itself fails
 * (with the sample input too), so every message of it would: delivery
 * pauses. Otherwise only this message's data is the problem (a metadata key
 * the template needs is missing): the intent is rejected.
 */
export class TemplateRenderError extends LeaseholdError {
  constructor(
    readonly file: string,
    readonly broken: boolean,
    detail: string,
  ) {
    super('template_error', `template ${file}: ${detail}`);
  }
}

/** One kind's template in one locale (of the shared set or a tenant's), parsed. */
export interface Variant {
  /** '' for the shared templates. */
  tenant: string;
  kind: string;
  /** Directory name, e.g. `en`, `pt-BR`. */
  locale: string;
  parts: Record<Part, Template[]> | undefined;
  brokenBecause: string | undefined;
  from: string | undefined;
  replyTo: string | undefined;
  headers: Record<string, string>;
  version: string;
}

/** Where a tenant's files live: `tenants/<tenant>/`, or nothing for the shared templates. */
export const prefixOf = (tenant: string) => (tenant ? `${TENANTS_DIR}/${tenant}/` : '');
export const fileOf = (tenant: string, kind: string, locale: string, part: Part) => `${prefixOf(tenant)}${kind}/${locale}/${PART_FILES[part]}`;

/** An error's first line, at most 300 characters: what a problem or a TemplateRenderError reports. */
export const detailOf = (error: unknown) => ((error as Error)?.message ?? String(error)).split('\n')[0]!.slice(0, 300);

/** Whitespace that `replace(/\s+/g, ' ')` would change: two in a row, or one that is not a space. */
const WHITESPACE_TO_COLLAPSE = /\s\s|[^\S ]/;

/**
 * Render `variant` for `input` in `locale` and `timeZone` (already chosen
 * by Templates.render). A part that throws is a TemplateRenderError naming
 * its file, `broken: false`: the caller decides whether the template or
 * the data is at fault.
 */
export function renderVariant(engines: Engines, variant: Variant, input: RenderInput, locale: string, timeZone: string): RenderedMessage {
  const parts = variant.parts!;
  const scope = {
    holdId: input.holdId,
    reference: input.intentId,
    metadata: structuredClone(input.metadata),
    locale,
    timeZone,
    expiresAt: localTime(input.expiresAt, locale, timeZone),
    expiredAt: localTime(input.expiredAt ?? input.expiresAt, locale, timeZone),
    confirmedAt: input.confirmedAt ? localTime(input.confirmedAt, locale, timeZone) : null,
    remaining: remaining(input.expiresAt, input.now ?? new Date(), locale),
  };
  const run = (part: Part): string => {
    // LiquidJS answers each `{% if metadata.x %}` on a missing key (lenientIf)
    // by throwing and catching internally. RenderContext throws no Error for
    // it, but a partial ({% render %}) renders in LiquidJS's own Context,
    // which does: capturing a stack for each was a third of the delivery
    // lane's CPU at batch 1,000. Rendering is synchronous, so stack capture
    // is off exactly for its duration; no stack is read from it.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      return renderWith(part === 'html' ? engines.html : engines.text, parts[part], scope);
    } catch (error) {
      throw new TemplateRenderError(fileOf(variant.tenant, variant.kind, variant.locale, part), false, detailOf(error));
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
  };
  const rendered = run('subject');
  // Most subjects have no run of whitespace to collapse: testing is cheaper than replacing.
  const subject = (WHITESPACE_TO_COLLAPSE.test(rendered) ? rendered.replace(/\s+/g, ' ') : rendered).trim();
  if (subject === '') throw new TemplateRenderError(fileOf(variant.tenant, variant.kind, variant.locale, 'subject'), false, 'rendered an empty subject');
  if (subject.length > 998) throw new TemplateRenderError(fileOf(variant.tenant, variant.kind, variant.locale, 'subject'), false, 'rendered a subject longer than 998 characters');
  return {
    template: variant.kind,
    templateLocale: variant.locale,
    templateVersion: variant.version,
    ...(variant.tenant ? { templateTenant: variant.tenant } : {}),
    locale,
    timeZone,
    subject,
    text: run('text').trim() + '\n',
    html: run('html').trim() + '\n',
    from: variant.from ?? input.from,
    replyTo: variant.replyTo ?? null,
    headers: { ...variant.headers, [INTENT_HEADER]: input.intentId },
  };
}

/** An error's first line, without the `template <file>: ` a TemplateRenderError already carries. */
export function renderDetail(error: unknown): string {
  const message = detailOf(error);
  return error instanceof TemplateRenderError ? message.replace(/^template [^:]+: /, '') : message;
}
