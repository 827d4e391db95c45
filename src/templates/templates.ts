import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Template } from 'liquidjs';
import { LeaseholdError } from '../errors.js';
import { checkKnownOptions } from '../db/arguments.js';
import { packageRoot } from '../runtime/package-root.js';
import { createEngines, markLenientLookups, type Engines } from './engine.js';
import { languageOf } from './locale.js';
import {
  detailOf,
  fileOf,
  prefixOf,
  renderDetail,
  renderVariant,
  TemplateRenderError,
  type RenderInput,
  type Variant,
} from './render.js';
import { validLocale, validTimeZone } from '../model/locale.js';
import { HOLD_ID_PATTERN } from '../model/hold-input.js';
import { CONFIRMED_TEMPLATE, EXPIRED_TEMPLATE, REMINDER_TEMPLATE } from '../model/hold-states.js';
import type { RenderedMessage } from '../model/message.js';
import {
  kindMetaSchema,
  localeMetaSchema,
  META_FILE,
  PART_FILES,
  PARTIALS_DIR,
  partialsOf,
  kindsOf,
  parseMeta,
  readTemplateDirectory,
  TENANTS_DIR,
  type KindMeta,
  type Part,
  type TemplateFiles,
  type TemplateProblem,
} from './source.js';

/** The message kinds the lanes send; a template set must have each. */
export const MESSAGE_KINDS = [EXPIRED_TEMPLATE, REMINDER_TEMPLATE, CONFIRMED_TEMPLATE] as const;

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


interface Kind {
  /** '' for the shared templates. */
  tenant: string;
  name: string;
  /** Whether its meta.json gives a sample (a tenant's kind without one borrows the shared kind's). */
  hasSample: boolean;
  sampleMetadata: Record<string, unknown>;
  sampleExpiresAt: Date | undefined;
  /** By lower-cased locale. */
  variants: Map<string, Variant>;
}

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
  /** Kinds by name, per tenant; '' holds the shared templates. */
  private readonly sets = new Map<string, Map<string, Kind>>([['', new Map()]]);
  private readonly engines: Engines;

  constructor(options: TemplatesOptions = {}) {
    checkKnownOptions('options', options, (r) => ({
      dir: r.z.string('must be a directory path').optional(),
      files: r.z.record(r.z.string(), r.z.string('must be the text of a template file'), 'must be an object of file paths to texts').optional(),
      defaultLocale: r.z.string('must be a locale such as en or de-CH').optional(),
      defaultTimeZone: r.z.string('must be an IANA time zone such as Europe/Berlin').optional(),
    }));
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
    for (const [tenant, kinds] of kindsOf(files)) {
      if (tenant !== '' && !HOLD_ID_PATTERN.test(tenant)) {
        this.problems.push({ file: `${TENANTS_DIR}/${tenant}`, message: 'is not a tenant: a tenant directory is named as the tenant (letters, digits, ".", "_", ":", "-")' });
        continue;
      }
      if (!this.sets.has(tenant)) this.sets.set(tenant, new Map());
      for (const [name, locales] of kinds) this.loadKind(files, tenant, name, locales, partialsHash);
    }
  }

  private get kinds(): Map<string, Kind> {
    return this.sets.get('')!;
  }

  private loadKind(files: TemplateFiles, tenant: string, name: string, locales: string[], partialsHash: string): void {
    const dir = `${prefixOf(tenant)}${name}`;
    if (name === TENANTS_DIR || name === PARTIALS_DIR || !/^[a-z0-9][a-z0-9-]{0,63}$/.test(name)) {
      const message = name === PARTIALS_DIR ? 'partials are shared: put them in partials/ at the top' : 'a message kind is lower-case letters, digits and "-"';
      this.problems.push({ file: dir, message });
      return;
    }
    const metaText = files[`${dir}/${META_FILE}`];
    const parsedMeta = parseMeta(kindMetaSchema(), `${dir}/${META_FILE}`, metaText);
    if (parsedMeta.problem) this.problems.push(parsedMeta.problem);
    const meta: KindMeta = parsedMeta.meta ?? {};
    const kind: Kind = {
      tenant,
      name,
      hasSample: meta.sample !== undefined,
      sampleMetadata: meta.sample?.metadata ?? {},
      sampleExpiresAt: meta.sample?.expiresAt ? new Date(meta.sample.expiresAt) : undefined,
      variants: new Map(),
    };
    this.sets.get(tenant)!.set(name, kind);
    for (const locale of locales) {
      if (validLocale(locale) === undefined) {
        this.problems.push({ file: `${dir}/${locale}`, message: 'is not a locale Intl supports (e.g. en, de, pt-BR)' });
        continue;
      }
      const variant = this.loadVariant(files, tenant, name, locale, { meta, metaText, metaProblem: parsedMeta.problem?.message, partialsHash });
      kind.variants.set(locale.toLowerCase(), variant);
    }
    if (kind.variants.size === 0) this.problems.push({ file: dir, message: 'has no locale directory (e.g. en/ with subject.liquid, text.liquid, html.liquid)' });
  }

  /** One kind in one locale: its meta merged over the kind's, its three parts parsed, its version hashed. */
  private loadVariant(
    files: TemplateFiles,
    tenant: string,
    kind: string,
    locale: string,
    from: { meta: KindMeta; metaText: string | undefined; metaProblem: string | undefined; partialsHash: string },
  ): Variant {
    const metaFile = `${prefixOf(tenant)}${kind}/${locale}/${META_FILE}`;
    const metaText = files[metaFile];
    const localeMeta = parseMeta(localeMetaSchema(), metaFile, metaText);
    if (localeMeta.problem) this.problems.push(localeMeta.problem);
    const parts = Object.keys(PART_FILES) as Part[];
    const sources = Object.fromEntries(parts.map((part) => [part, files[fileOf(tenant, kind, locale, part)]])) as Record<Part, string | undefined>;
    const variant: Variant = {
      tenant,
      kind,
      locale,
      parts: undefined,
      brokenBecause: from.metaProblem ?? localeMeta.problem?.message,
      from: localeMeta.meta?.from ?? from.meta.from,
      replyTo: localeMeta.meta?.replyTo ?? from.meta.replyTo,
      headers: { ...from.meta.headers, ...localeMeta.meta?.headers },
      version: createHash('sha256')
        // The tenant is hashed too (shared versions stay as they were), so a tenant's copy of the shared files is its own version.
        .update(JSON.stringify([from.metaText ?? null, metaText ?? null, sources.subject, sources.text, sources.html, from.partialsHash, ...(tenant ? [tenant] : [])]))
        .digest('hex')
        .slice(0, 16),
    };
    const parsed: Partial<Record<Part, Template[]>> = {};
    for (const part of parts) {
      const file = fileOf(tenant, kind, locale, part);
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
        continue;
      }
      markLenientLookups(parsed[part]);
    }
    if (variant.brokenBecause === undefined) variant.parts = parsed as Record<Part, Template[]>;
    return variant;
  }

  /** Tenants with templates of their own (`tenants/<tenant>/`), sorted. */
  tenants(): string[] {
    return [...this.sets.keys()].filter((t) => t !== '').sort();
  }

  /** Kinds and their locales, with each locale's version hash: the shared ones, or one tenant's own. */
  list(tenant = ''): Array<{ kind: string; locales: Array<{ locale: string; version: string }> }> {
    return [...(this.sets.get(tenant)?.values() ?? [])].map((k) => ({
      kind: k.name,
      locales: [...k.variants.values()].map((v) => ({ locale: v.locale, version: v.version })),
    }));
  }

  /**
   * Every problem: those found while loading, missing kinds, a kind without
   * a template for the default locale, and each template rendered with its
   * sample input (the kind's meta.json `sample.metadata`), so a missing
   * variable or a bad include is found before any message is. Each
   * tenant's templates are checked the same way, except that a tenant needs
   * no kind or default locale of its own (the shared ones stand in), and
   * its problems are located under `tenants/<tenant>/`.
   */
  check(): TemplateProblem[] {
    const problems = [...this.problems];
    for (const kind of MESSAGE_KINDS) {
      if (!this.kinds.has(kind)) problems.push({ file: kind, message: `is missing: every template set needs ${kind}/<locale>/` });
    }
    for (const [tenant, kinds] of this.sets) {
      for (const kind of kinds.values()) {
        const dir = `${prefixOf(tenant)}${kind.name}`;
        if (tenant === '' && kind.variants.size > 0 && !this.variantFor(kind, this.defaultLocale)) {
          problems.push({ file: dir, message: `has no template for the default locale ${this.defaultLocale} (LEASEHOLD_DEFAULT_LOCALE)` });
        }
        // A misspelt kind under a tenant would otherwise be silently never used.
        if (tenant !== '' && !this.kinds.has(kind.name) && !(MESSAGE_KINDS as readonly string[]).includes(kind.name)) {
          problems.push({ file: dir, message: `is not a message kind the shared templates have (${[...this.kinds.keys()].join(', ') || 'none'})` });
        }
        for (const variant of kind.variants.values()) {
          if (!variant.parts) continue;
          try {
            renderVariant(this.engines, variant, this.sampleInput(kind.name, { tenant }), variant.locale, this.defaultTimeZone);
          } catch (error) {
            problems.push({ file: (error as TemplateRenderError).file ?? `${dir}/${variant.locale}`, message: renderDetail(error) });
          }
        }
      }
    }
    return problems;
  }

  /** The input `check` and `preview --sample` render with (a tenant's kind without a sample uses the shared kind's). */
  sampleInput(kind: string, overrides: Partial<RenderInput> = {}): RenderInput {
    const own = overrides.tenant ? this.sets.get(overrides.tenant)?.get(kind) : undefined;
    const k = own?.hasSample ? own : (this.kinds.get(kind) ?? own);
    const expiresAt = k?.sampleExpiresAt ?? new Date(Math.floor(Date.now() / 60_000) * 60_000 - 60_000);
    return {
      intentId: `${kind}:sample-hold`,
      holdId: 'sample-hold',
      metadata: structuredClone(k?.sampleMetadata ?? {}),
      expiresAt,
      expiredAt: new Date(expiresAt.getTime() + 1000),
      from: 'Support <support@example.com>',
      ...sampleMoments(kind, expiresAt),
      ...overrides,
    };
  }

  /**
   * Render one message. The hold's `metadata.locale` picks the template
   * (`de-CH`, then `de`, then the default locale, then its language) and,
   * with `metadata.timeZone`, how times are formatted. A tenant's own
   * template for a kind and locale comes before the shared one at each step:
   * the fallback is per kind and locale, so a tenant may override just one.
   */
  render(kind: string, input: RenderInput): RenderedMessage {
    const own = input.tenant ? this.sets.get(input.tenant)?.get(kind) : undefined;
    const shared = this.kinds.get(kind);
    if (!own && !shared) throw new TemplateRenderError(kind, true, 'no templates for this kind');
    const pick = (locale: string) => (own && this.variantFor(own, locale)) || (shared && this.variantFor(shared, locale)) || undefined;
    const requested = validLocale(input.metadata['locale']);
    const timeZone = validTimeZone(input.metadata['timeZone']) ?? this.defaultTimeZone;
    const viaRequested = requested ? pick(requested) : undefined;
    const variant = viaRequested ?? pick(this.defaultLocale);
    if (!variant) throw new TemplateRenderError(kind, true, `no template for ${requested ?? this.defaultLocale} or the default locale ${this.defaultLocale}`);
    // Times are formatted in the customer's own locale when its language has
    // a template (de-CH with de/); otherwise in the default locale, so an
    // English text never carries, say, French dates.
    const locale = viaRequested ? requested! : this.defaultLocale;
    const dir = `${prefixOf(variant.tenant)}${kind}/${variant.locale}`;
    if (!variant.parts) throw new TemplateRenderError(dir, true, variant.brokenBecause ?? 'does not parse');
    try {
      return renderVariant(this.engines, variant, input, locale, timeZone);
    } catch (error) {
      const file = error instanceof TemplateRenderError ? error.file : dir;
      // Does the template fail with its sample input too? Then it is broken
      // for every message, not just this one.
      let broken = false;
      try {
        renderVariant(this.engines, variant, this.sampleInput(kind, { tenant: variant.tenant }), locale, timeZone);
      } catch {
        broken = true;
      }
      throw new TemplateRenderError(file, broken, renderDetail(error));
    }
  }

  private variantFor(kind: Kind, locale: string): Variant | undefined {
    return kind.variants.get(locale.toLowerCase()) ?? kind.variants.get(languageOf(locale));
  }
}

/**
 * The moments a sample of each kind is rendered at, as the lanes would: a
 * reminder 5 minutes before its deadline (so it reads "in 5 minutes"), a
 * confirmation 8 minutes before it, an expiry email just after it.
 */
function sampleMoments(kind: string, expiresAt: Date): Pick<RenderInput, 'now' | 'confirmedAt'> {
  const at = (seconds: number) => new Date(expiresAt.getTime() + seconds * 1000);
  if (kind === REMINDER_TEMPLATE) return { now: at(-5 * 60), confirmedAt: null };
  if (kind === CONFIRMED_TEMPLATE) return { now: at(-8 * 60 + 1), confirmedAt: at(-8 * 60) };
  return { now: at(2), confirmedAt: null };
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
