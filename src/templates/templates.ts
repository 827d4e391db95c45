import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Template } from 'liquidjs';
import { LeaseholdError } from '../errors.js';
import { packageRoot } from '../runtime/package-root.js';
import { createEngines, type Engines } from './engine.js';
import { languageOf, localTime } from './locale.js';
import { validLocale, validTimeZone } from '../model/locale.js';
import type { RenderedMessage } from '../model/message.js';
import {
  kindMetaSchema,
  localeMetaSchema,
  META_FILE,
  PART_FILES,
  PARTIALS_DIR,
  parseMeta,
  readTemplateDirectory,
  type KindMeta,
  type Part,
  type TemplateFiles,
  type TemplateProblem,
} from './source.js';

/** Header naming the intent on every message, so a recipient's side can recognise duplicates. */
export const INTENT_HEADER = 'X-Leasehold-Intent-Id';

/** The message kinds the lanes send; a template set must have each. */
export const MESSAGE_KINDS = ['reservation-expired'] as const;

export interface TemplatesOptions {
  /** A template directory. Default: the templates shipped in the package. */
  dir?: string;
  /** The same layout as an object (`'reservation-expired/en/subject.liquid': '...'`), instead of `dir`. */
  files?: TemplateFiles;
  /** Locale when a hold names none (or one Intl cannot format). Default `en`. */
  defaultLocale?: string;
  /** IANA time zone when a hold names none (or an unknown one). Default `UTC`. */
  defaultTimeZone?: string;
}

/** What a template is rendered from: the stored facts of one intent and its hold. */
export interface RenderInput {
  intentId: string;
  holdId: string;
  metadata: Record<string, unknown>;
  expiresAt: Date;
  expiredAt: Date | null;
  /** Sender used when the template's meta names none (EMAIL_FROM). */
  from: string;
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

interface Variant {
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

interface Kind {
  name: string;
  sampleMetadata: Record<string, unknown>;
  sampleExpiresAt: Date | undefined;
  /** By lower-cased locale. */
  variants: Map<string, Variant>;
}

const fileOf = (kind: string, locale: string, part: Part) => `${kind}/${locale}/${PART_FILES[part]}`;

const detailOf = (error: unknown) => ((error as Error)?.message ?? String(error)).split('\n')[0]!.slice(0, 300);

/**
 * A loaded, parsed template set. Loading never throws for what is in the
 * templates: problems are collected (`problems`, `check()`), and rendering a
 * broken template throws a TemplateRenderError with `broken: true`.
 */
export class Templates {
  readonly source: string;
  readonly defaultLocale: string;
  readonly defaultTimeZone: string;
  /** Problems found while loading (unreadable files, bad meta, syntax errors, unknown filters). */
  readonly problems: TemplateProblem[] = [];
  private readonly kinds = new Map<string, Kind>();
  private readonly engines: Engines;

  constructor(options: TemplatesOptions = {}) {
    const defaultLocale = validLocale(options.defaultLocale ?? 'en');
    const defaultTimeZone = validTimeZone(options.defaultTimeZone ?? 'UTC');
    if (!defaultLocale) throw new LeaseholdError('template_error', `default locale ${JSON.stringify(options.defaultLocale)} is not a locale Intl supports`);
    if (!defaultTimeZone) throw new LeaseholdError('template_error', `default time zone ${JSON.stringify(options.defaultTimeZone)} is not an IANA time zone`);
    this.defaultLocale = defaultLocale;
    this.defaultTimeZone = defaultTimeZone;

    let files: TemplateFiles;
    if (options.files) {
      this.source = 'templates passed as files';
      files = options.files;
    } else {
      const dir = options.dir ?? path.join(packageRoot(), 'templates');
      this.source = dir;
      const read = readTemplateDirectory(dir);
      files = read.files;
      this.problems.push(...read.problems);
    }

    const partials = partialsOf(files);
    this.engines = createEngines(partials);
    for (const [name, content] of Object.entries(partials)) {
      try {
        this.engines.html.parse(content, `${PARTIALS_DIR}/${name}`);
      } catch (error) {
        this.problems.push({ file: `${PARTIALS_DIR}/${name}`, message: detailOf(error) });
      }
    }
    const partialsHash = JSON.stringify(Object.entries(partials).sort(([a], [b]) => a.localeCompare(b)));
    for (const [name, locales] of kindsOf(files)) this.loadKind(files, name, locales, partialsHash);
  }

  private loadKind(files: TemplateFiles, name: string, locales: string[], partialsHash: string): void {
    if (!/^[a-z0-9][a-z0-9-]{0,63}$/.test(name)) {
      this.problems.push({ file: name, message: 'a message kind is lower-case letters, digits and "-"' });
      return;
    }
    const metaText = files[`${name}/${META_FILE}`];
    const parsedMeta = parseMeta(kindMetaSchema(), `${name}/${META_FILE}`, metaText);
    if (parsedMeta.problem) this.problems.push(parsedMeta.problem);
    const meta: KindMeta = parsedMeta.meta ?? {};
    const kind: Kind = {
      name,
      sampleMetadata: meta.sample?.metadata ?? {},
      sampleExpiresAt: meta.sample?.expiresAt ? new Date(meta.sample.expiresAt) : undefined,
      variants: new Map(),
    };
    this.kinds.set(name, kind);
    for (const locale of locales) {
      if (validLocale(locale) === undefined) {
        this.problems.push({ file: `${name}/${locale}`, message: 'is not a locale Intl supports (e.g. en, de, pt-BR)' });
        continue;
      }
      const variant = this.loadVariant(files, name, locale, { meta, metaText, metaProblem: parsedMeta.problem?.message, partialsHash });
      kind.variants.set(locale.toLowerCase(), variant);
    }
    if (kind.variants.size === 0) this.problems.push({ file: name, message: 'has no locale directory (e.g. en/ with subject.liquid, text.liquid, html.liquid)' });
  }

  /** One kind in one locale: its meta merged over the kind's, its three parts parsed, its version hashed. */
  private loadVariant(
    files: TemplateFiles,
    kind: string,
    locale: string,
    from: { meta: KindMeta; metaText: string | undefined; metaProblem: string | undefined; partialsHash: string },
  ): Variant {
    const metaText = files[`${kind}/${locale}/${META_FILE}`];
    const localeMeta = parseMeta(localeMetaSchema(), `${kind}/${locale}/${META_FILE}`, metaText);
    if (localeMeta.problem) this.problems.push(localeMeta.problem);
    const parts = Object.keys(PART_FILES) as Part[];
    const sources = Object.fromEntries(parts.map((part) => [part, files[fileOf(kind, locale, part)]])) as Record<Part, string | undefined>;
    const variant: Variant = {
      kind,
      locale,
      parts: undefined,
      brokenBecause: from.metaProblem ?? localeMeta.problem?.message,
      from: localeMeta.meta?.from ?? from.meta.from,
      replyTo: localeMeta.meta?.replyTo ?? from.meta.replyTo,
      headers: { ...from.meta.headers, ...localeMeta.meta?.headers },
      version: createHash('sha256')
        .update(JSON.stringify([from.metaText ?? null, metaText ?? null, sources.subject, sources.text, sources.html, from.partialsHash]))
        .digest('hex')
        .slice(0, 16),
    };
    const parsed: Partial<Record<Part, Template[]>> = {};
    for (const part of parts) {
      const file = fileOf(kind, locale, part);
      const source = sources[part];
      if (source === undefined) {
        this.problems.push({ file, message: 'is missing (each locale needs subject.liquid, text.liquid and html.liquid)' });
        variant.brokenBecause ??= `${PART_FILES[part]} is missing`;
        continue;
      }
      try {
        parsed[part] = (part === 'html' ? this.engines.html : this.engines.text).parse(source, file);
      } catch (error) {
        this.problems.push({ file, message: detailOf(error) });
        variant.brokenBecause ??= `${PART_FILES[part]}: ${detailOf(error)}`;
      }
    }
    if (variant.brokenBecause === undefined) variant.parts = parsed as Record<Part, Template[]>;
    return variant;
  }

  /** Kinds and their locales, with each locale's version hash. */
  list(): Array<{ kind: string; locales: Array<{ locale: string; version: string }> }> {
    return [...this.kinds.values()].map((k) => ({
      kind: k.name,
      locales: [...k.variants.values()].map((v) => ({ locale: v.locale, version: v.version })),
    }));
  }

  /**
   * Every problem: those found while loading, missing kinds, a kind without
   * a template for the default locale, and each template rendered with its
   * sample input (the kind's meta.json `sample.metadata`), so a missing
   * variable or a bad include is found before any message is.
   */
  check(): TemplateProblem[] {
    const problems = [...this.problems];
    for (const kind of MESSAGE_KINDS) {
      if (!this.kinds.has(kind)) problems.push({ file: kind, message: `is missing: every template set needs ${kind}/<locale>/` });
    }
    for (const kind of this.kinds.values()) {
      if (kind.variants.size > 0 && !this.variantFor(kind, this.defaultLocale)) {
        problems.push({ file: kind.name, message: `has no template for the default locale ${this.defaultLocale} (LEASEHOLD_DEFAULT_LOCALE)` });
      }
      for (const variant of kind.variants.values()) {
        if (!variant.parts) continue;
        try {
          this.renderVariant(variant, this.sampleInput(kind.name), variant.locale, this.defaultTimeZone);
        } catch (error) {
          problems.push({ file: (error as TemplateRenderError).file ?? `${kind.name}/${variant.locale}`, message: renderDetail(error) });
        }
      }
    }
    return problems;
  }

  /** The input `check` and `preview --sample` render with. */
  sampleInput(kind: string, overrides: Partial<RenderInput> = {}): RenderInput {
    const k = this.kinds.get(kind);
    const expiresAt = k?.sampleExpiresAt ?? new Date(Math.floor(Date.now() / 60_000) * 60_000 - 60_000);
    return {
      intentId: `${kind}:sample-hold`,
      holdId: 'sample-hold',
      metadata: structuredClone(k?.sampleMetadata ?? {}),
      expiresAt,
      expiredAt: new Date(expiresAt.getTime() + 1000),
      from: 'Support <support@example.com>',
      ...overrides,
    };
  }

  /**
   * Render one message. The hold's `metadata.locale` picks the template
   * (`de-CH`, then `de`, then the default locale, then its language) and,
   * with `metadata.timeZone`, how times are formatted.
   */
  render(kind: string, input: RenderInput): RenderedMessage {
    const k = this.kinds.get(kind);
    if (!k) throw new TemplateRenderError(kind, true, 'no templates for this kind');
    const requested = validLocale(input.metadata['locale']);
    const timeZone = validTimeZone(input.metadata['timeZone']) ?? this.defaultTimeZone;
    const viaRequested = requested ? this.variantFor(k, requested) : undefined;
    const variant = viaRequested ?? this.variantFor(k, this.defaultLocale);
    if (!variant) throw new TemplateRenderError(kind, true, `no template for ${requested ?? this.defaultLocale} or the default locale ${this.defaultLocale}`);
    // Times are formatted in the customer's own locale when its language has
    // a template (de-CH with de/); otherwise in the default locale, so an
    // English text never carries, say, French dates.
    const locale = viaRequested ? requested! : this.defaultLocale;
    if (!variant.parts) throw new TemplateRenderError(`${kind}/${variant.locale}`, true, variant.brokenBecause ?? 'does not parse');
    try {
      return this.renderVariant(variant, input, locale, timeZone);
    } catch (error) {
      const file = error instanceof TemplateRenderError ? error.file : `${kind}/${variant.locale}`;
      // Does the template fail with its sample input too? Then it is broken
      // for every message, not just this one.
      let broken = false;
      try {
        this.renderVariant(variant, this.sampleInput(kind), locale, timeZone);
      } catch {
        broken = true;
      }
      throw new TemplateRenderError(file, broken, renderDetail(error));
    }
  }

  private variantFor(kind: Kind, locale: string): Variant | undefined {
    return kind.variants.get(locale.toLowerCase()) ?? kind.variants.get(languageOf(locale));
  }

  private renderVariant(variant: Variant, input: RenderInput, locale: string, timeZone: string): RenderedMessage {
    const parts = variant.parts!;
    const scope = {
      holdId: input.holdId,
      reference: input.intentId,
      metadata: structuredClone(input.metadata),
      locale,
      timeZone,
      expiresAt: localTime(input.expiresAt, locale, timeZone),
      expiredAt: localTime(input.expiredAt ?? input.expiresAt, locale, timeZone),
    };
    const run = (part: Part): string => {
      // LiquidJS answers each `{% if metadata.x %}` on a missing key (lenientIf)
      // by throwing and catching an Error internally; capturing a stack trace
      // for each was a third of the delivery lane's CPU at batch 1,000 (463 of
      // ~1,400 ms per 10,000 messages). Rendering is synchronous, so stack
      // capture is off exactly for its duration; no stack is read from it.
      const stackTraceLimit = Error.stackTraceLimit;
      Error.stackTraceLimit = 0;
      try {
        // Variables are globals so partials ({% render %}) see them too.
        return String((part === 'html' ? this.engines.html : this.engines.text).renderSync(parts[part], {}, { globals: scope }));
      } catch (error) {
        throw new TemplateRenderError(fileOf(variant.kind, variant.locale, part), false, detailOf(error));
      } finally {
        Error.stackTraceLimit = stackTraceLimit;
      }
    };
    const subject = run('subject').replace(/\s+/g, ' ').trim();
    if (subject === '') throw new TemplateRenderError(fileOf(variant.kind, variant.locale, 'subject'), false, 'rendered an empty subject');
    if (subject.length > 998) throw new TemplateRenderError(fileOf(variant.kind, variant.locale, 'subject'), false, 'rendered a subject longer than 998 characters');
    return {
      template: variant.kind,
      templateLocale: variant.locale,
      templateVersion: variant.version,
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
}

/** `partials/<name>.liquid` files, keyed `<name>.liquid` as LiquidJS looks them up. */
function partialsOf(files: TemplateFiles): Record<string, string> {
  const partials: Record<string, string> = {};
  for (const [file, content] of Object.entries(files)) {
    const [top, name, ...rest] = file.split('/');
    if (top === PARTIALS_DIR && name?.endsWith('.liquid') && rest.length === 0) partials[name] = content;
  }
  return partials;
}

/** Kind directories and, for each, its locale directories (sorted). */
function kindsOf(files: TemplateFiles): Map<string, string[]> {
  const kinds = new Map<string, Set<string>>();
  for (const file of Object.keys(files).sort()) {
    const segments = file.split('/');
    if (segments[0] === PARTIALS_DIR || segments.length < 2) continue;
    const locales = kinds.get(segments[0]!) ?? new Set<string>();
    if (segments.length === 3) locales.add(segments[1]!);
    kinds.set(segments[0]!, locales);
  }
  return new Map([...kinds].sort(([a], [b]) => a.localeCompare(b)).map(([kind, locales]) => [kind, [...locales].sort()]));
}

function renderDetail(error: unknown): string {
  const message = detailOf(error);
  return error instanceof TemplateRenderError ? message.replace(/^template [^:]+: /, '') : message;
}

/** Load a template set (see TemplatesOptions). Check it with `check()` before relying on it. */
export function loadTemplates(options: TemplatesOptions = {}): Templates {
  return new Templates(options);
}

let shipped: Templates | undefined;

/** The templates shipped in the package (English defaults), loaded once per process. */
export function shippedTemplates(): Templates {
  return (shipped ??= new Templates());
}
