import { NotFoundError } from '../../errors.js';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { CONFIRMED_TEMPLATE, EXPIRED_TEMPLATE, intentIdForHold, REMINDER_TEMPLATE } from '../../model/hold-states.js';
import { validLocale, validTimeZone } from '../../model/locale.js';
import type { RenderInput } from '../../templates/render.js';
import { CliExit, EXIT_FAILURE, EXIT_USAGE } from '../context.js';
import type { ContextFactory } from '../context.js';
import { holdIdArg } from './args.js';
import { validateTenant } from '../../model/hold-input.js';
import { iso } from '../../format.js';

const localeArg = (value: string): string => {
  const locale = validLocale(value);
  if (!locale) throw new InvalidArgumentError('must be a locale this Node can format (e.g. en, de-CH)');
  return locale;
};

const timeZoneArg = (value: string): string => {
  const zone = validTimeZone(value);
  if (!zone) throw new InvalidArgumentError('must be an IANA time zone (e.g. UTC, Europe/Berlin)');
  return zone;
};

interface PreviewOptions {
  hold?: string;
  sample?: boolean;
  locale?: string;
  timeZone?: string;
  out?: string;
  tenant?: string;
}

const tenantArg = (value: string): string => {
  try {
    return validateTenant(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
};

export function registerTemplates(program: Command, context: ContextFactory): void {
  const templates = program
    .command('templates')
    .description('check and preview the message templates (LEASEHOLD_TEMPLATES_DIR, or the ones shipped in the package)');

  templates
    .command('check')
    .description('parse every template and render each with its sample data; exit 2 listing every problem')
    .action(async () => {
      const ctx = context();
      const [{ templatesFromConfig }, { describeProblem }] = await Promise.all([import('../../templates/configured.js'), import('../../templates/source.js')]);
      const set = templatesFromConfig(ctx.config);
      ctx.out(`templates: ${set.source} (default locale ${set.defaultLocale}, time zone ${set.defaultTimeZone})`);
      for (const { kind, locales } of set.list()) {
        ctx.out(`  ${kind}: ${locales.map((l) => `${l.locale} (version ${l.version})`).join(', ') || 'no locales'}`);
      }
      for (const tenant of set.tenants()) {
        for (const { kind, locales } of set.list(tenant)) {
          ctx.out(`  tenant ${tenant}: ${kind}: ${locales.map((l) => `${l.locale} (version ${l.version})`).join(', ') || 'no locales'}`);
        }
      }
      const problems = set.check();
      for (const problem of problems) ctx.out(`  problem: ${describeProblem(problem)}`);
      if (problems.length > 0) throw new CliExit(EXIT_USAGE, `leasehold: ${problems.length} template problem(s) in ${set.source}`);
      ctx.out('templates ok');
    });

  templates
    .command('preview')
    .description("render a message as it would be sent: print the subject and text, write the HTML to a file")
    .argument('<kind>', 'message kind, e.g. reservation-expired')
    .addOption(new Option('--hold <id>', "render with this hold's metadata and times").argParser(holdIdArg).conflicts('sample'))
    .addOption(new Option('--sample', "render with the kind's sample data (the default)").conflicts('hold'))
    .option('--locale <tag>', "render in this locale (overrides the hold's)", localeArg)
    .option('--time-zone <zone>', "format times in this IANA zone (overrides the hold's)", timeZoneArg)
    .option('--tenant <tenant>', "render as this tenant's email: its own templates (tenants/<tenant>/) where it has them (default: the hold's tenant)", tenantArg)
    .option('--out <file>', 'where to write the HTML (default: a new private directory under the temporary directory)')
    .action(async (kind: string, options: PreviewOptions) => {
      const ctx = context();
      const [{ templatesFromConfig }, { TemplateRenderError }] = await Promise.all([import('../../templates/configured.js'), import('../../templates/render.js')]);
      const set = templatesFromConfig(ctx.config);
      const kinds = [...new Set([...set.list(), ...(options.tenant ? set.list(options.tenant) : [])].map((k) => k.kind))];
      if (!kinds.includes(kind)) {
        throw new CliExit(EXIT_USAGE, `leasehold: no templates for ${JSON.stringify(kind)} in ${set.source} (have: ${kinds.join(', ') || 'none'})`);
      }
      let input: RenderInput = set.sampleInput(kind, { from: ctx.config.emailFrom, ...(options.tenant ? { tenant: options.tenant } : {}) });
      let note: string | undefined;
      if (options.hold) {
        const [{ getHold }, { messagesSummary }] = await Promise.all([import('../../holds/holds.js'), import('../../tables/messages.js')]);
        const db = await ctx.database({ poolSize: 2, migrations: 'require' });
        try {
          const hold = await getHold(db.pool, options.hold, { schema: db.schema });
          if (!hold) throw new NotFoundError('hold', options.hold);
          // Each kind is its own intent (`<kind>:<hold id>`), with its own stored message.
          const intentId = kind === EXPIRED_TEMPLATE ? intentIdForHold(hold.id) : `${kind}:${hold.id}`;
          const tenant = options.tenant ?? hold.tenant;
          input = {
            intentId,
            holdId: hold.id,
            metadata: hold.metadata,
            expiresAt: hold.expiresAt,
            expiredAt: hold.expiredAt,
            confirmedAt: hold.confirmedAt,
            from: ctx.config.emailFrom,
            tenant,
          };
          const stored = await messagesSummary(db.pool, db.schema, intentId);
          if (stored) {
            note = `note: this hold's email was rendered at ${iso(stored.renderedAt)} (version ${stored.templateVersion}); its sends use that stored message, a replay renders it again`;
          } else if (hold.status !== 'expired' && kind === EXPIRED_TEMPLATE) {
            note = `note: the hold is ${hold.status}; this is the email it would get if it expired`;
          } else if (hold.status !== 'confirmed' && kind === CONFIRMED_TEMPLATE) {
            note = `note: the hold is ${hold.status}; this is the email it would get if it were confirmed`;
          } else if (hold.status !== 'held' && kind === REMINDER_TEMPLATE) {
            note = `note: the hold is ${hold.status}; a reminder goes out only while it is held`;
          }
        } finally {
          await db.close();
        }
      }
      input = {
        ...input,
        metadata: {
          ...input.metadata,
          ...(options.locale ? { locale: options.locale } : {}),
          ...(options.timeZone ? { timeZone: options.timeZone } : {}),
        },
      };
      let message;
      try {
        message = set.render(kind, input);
      } catch (error) {
        if (!(error instanceof TemplateRenderError)) throw error;
        throw new CliExit(
          error.broken ? EXIT_USAGE : EXIT_FAILURE,
          `leasehold: ${error.message}` + (error.broken ? '' : ' (a send would reject this intent; the template needs data this hold lacks)'),
        );
      }
      // Not a fixed name in the shared temporary directory, where another user
      // could read the message or plant a link: a fresh directory only this user can open.
      const out = options.out ?? path.join(await mkdtemp(path.join(os.tmpdir(), 'leasehold-preview-')), `${kind}-${message.templateLocale}.html`);
      await writeFile(out, message.html);
      const tenantDir = message.templateTenant ? `tenants/${message.templateTenant}/` : '';
      ctx.out(`template ${tenantDir}${message.template}/${message.templateLocale} (version ${message.templateVersion}), locale ${message.locale}, time zone ${message.timeZone}`);
      if (note) ctx.out(note);
      ctx.out(`From: ${message.from}`);
      if (message.replyTo) ctx.out(`Reply-To: ${message.replyTo}`);
      for (const [name, value] of Object.entries(message.headers)) ctx.out(`${name}: ${value}`);
      ctx.out(`Subject: ${message.subject}`);
      ctx.out('');
      for (const line of message.text.replace(/\n$/, '').split('\n')) ctx.out(line);
      ctx.out('');
      ctx.out(`HTML written to ${out}`);
    });
}
