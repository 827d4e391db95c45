import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Option, type Command } from 'commander';
import type { AccountsInput } from '../../capacity/accounts.js';
import { FLAGS, type WorkloadField } from '../../capacity/flags.js';
import type { ConfigDefaults } from '../../capacity/input.js';
import { ConfigError, ValidationError } from '../../errors.js';
import { packageRoot } from '../../runtime/package-root.js';
import { CliExit, EXIT_USAGE } from '../context.js';
import type { ContextFactory } from '../context.js';

/**
 * `leasehold capacity`: parse the workload (YAML file, then flags over it,
 * then the configuration's defaults) and the provider accounts
 * (--accounts-file, else LEASEHOLD_ACCOUNTS_FILE unless provider flags
 * describe one account, else one account from those flags), run the pure
 * model, print. Touches no database, reads no secret and fetches nothing.
 */

const HELP: Record<WorkloadField, string> = {
  'volume.emailsPerDay': 'emails sent per day, one per expired hold (required)',
  'volume.expiredShare': 'share of holds that expire, 0-1 (default 1)',
  'burst.holds': 'holds falling due together in the worst burst (default 0)',
  'burst.windowSeconds': 'seconds over which they fall due (default 0: at once)',
  holdWindowSeconds: 'how long a hold is held, seconds (default 1200)',
  retentionDays: 'days finished rows are kept (default 30)',
  promiseSeconds: 'email promise, seconds (default LEASEHOLD_EMAIL_PROMISE_S)',
  expiryPromiseSeconds: 'expiry promise, seconds (default LEASEHOLD_EXPIRY_PROMISE_S)',
  'provider.name': 'sandbox, resend, postmark, ses or smtp (default EMAIL_PROVIDER)',
  'provider.perSecond': 'granted permits per second, requests or emails as LEASEHOLD_RATE_UNIT says (default LEASEHOLD_RATE_PER_SECOND)',
  'provider.burst': 'limiter burst, in permits (default LEASEHOLD_RATE_BURST)',
  'provider.dailyQuota': 'granted emails per day (default: none)',
  'provider.latencyMs': 'provider answer time per send, ms (default 200)',
  'deployment.workers': 'machines running `leasehold start` (default 2)',
  'deployment.deliveryBatch': 'LEASEHOLD_DELIVERY_BATCH (default: the configured one)',
  'deployment.deliveryConcurrency': 'LEASEHOLD_DELIVERY_CONCURRENCY (default: the configured one)',
  'deployment.expiryBatch': 'LEASEHOLD_EXPIRY_BATCH (default: the configured one)',
  'deployment.expiryIntervalMs': 'LEASEHOLD_EXPIRY_INTERVAL_MS (default: the configured one)',
  'deployment.attemptsPerEmail': 'send attempts per email on average (default 1)',
  'deadlines.noticeSeconds': 'expiry and confirmation emails not sent after this many seconds (default LEASEHOLD_NOTICE_DEADLINE_S)',
  'deadlines.reminderSeconds': 'reminders go out this many seconds before expiry, their deadline (default LEASEHOLD_REMIND_BEFORE_S)',
  'storage.bloatFactor': 'multiplier on measured row sizes for update churn (default 1.3)',
  'observability.logRetentionDays': 'days logs are kept (default 30)',
  freeTiers: 'subtract free monthly allowances (shared by the whole account)',
};

/** commander's camelCase attribute for a flag: --emails-per-day -> emailsPerDay. */
const attribute = (flag: string) => flag.slice(2).replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

// `yaml` loads only when this command runs: every other command starts faster.
function readText(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliExit(EXIT_USAGE, `leasehold capacity: ${what}: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

async function readYaml(file: string, what: string): Promise<unknown> {
  const { parse: parseYaml } = await import('yaml');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliExit(EXIT_USAGE, `leasehold capacity: ${what}: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  try {
    return parseYaml(text);
  } catch (error) {
    throw new CliExit(EXIT_USAGE, `leasehold capacity: ${what}: ${file} is not valid YAML: ${(error as Error).message.split('\n')[0]!.replace(/:$/, '')}`);
  }
}

/** Numbers in JSON: cents stay, tiny unit prices keep six significant digits. */
const tidy = (_key: string, value: unknown) =>
  typeof value === 'number' && !Number.isInteger(value)
    ? Math.abs(value) >= 1
      ? Math.round(value * 1e4) / 1e4
      : Number(value.toPrecision(6))
    : value;

export function registerCapacity(program: Command, context: ContextFactory): void {
  const command = program
    .command('capacity')
    .description('workload and cost model: burst drain time, oldest email age against the promise, rows, statements/s, monthly cost of three designs')
    .option('--file <path>', 'workload YAML (see capacity/workload.example.yaml); flags override it field by field')
    .option('--prices <path>', 'price table YAML (default: capacity/prices.yaml in the package)')
    .option(
      '--accounts-file <path>',
      'provider accounts YAML, as LEASEHOLD_ACCOUNTS_FILE (its default, unless provider flags are given): each account\'s rate, unit, daily quota and batch, in failover order',
    )
    .option('--detail', 'the whole report: every figure with its formula, every cost line, each price with its source and date')
    .option('--json', 'print the report as JSON');
  for (const [field, flag] of Object.entries(FLAGS) as Array<[WorkloadField, string]>) {
    command.addOption(field === 'freeTiers' ? new Option(flag, HELP[field]) : new Option(`${flag} <value>`, HELP[field]));
  }
  command.action(async (options: Record<string, string | boolean | undefined>) => {
    // The model and its rules (zod) load only for this command.
    const [{ accountFieldsIn, chooseAccounts, singleAccount }, { mergeInput, nest, parseWorkload }, { capacityModel }, { parsePrices }, { renderReport, renderSummary }] =
      await Promise.all([
        import('../../capacity/accounts.js'),
        import('../../capacity/input.js'),
        import('../../capacity/model.js'),
        import('../../capacity/prices.js'),
        import('../../capacity/render.js'),
      ]);
    const ctx = context();
    const { config } = ctx;
    const defaults: ConfigDefaults = {
      provider: config.emailProvider,
      perSecond: config.ratePerSecond,
      burst: config.rateBurst,
      deliveryBatch: config.deliveryBatch,
      deliveryConcurrency: config.deliveryConcurrency,
      expiryBatch: config.expiryBatch,
      expiryIntervalMs: config.expiryIntervalMs,
      promiseSeconds: config.emailPromiseS,
      expiryPromiseSeconds: config.expiryPromiseS,
      noticeDeadlineSeconds: config.noticeDeadlineSeconds,
      remindBeforeSeconds: config.remindBeforeSeconds,
    };
    const fromFile = typeof options.file === 'string' ? await readYaml(options.file, '--file') : {};
    const flags = Object.fromEntries(
      (Object.entries(FLAGS) as Array<[WorkloadField, string]>).map(([field, flag]) => [field, options[attribute(flag)]]),
    );
    const pricesFile = typeof options.prices === 'string' ? options.prices : path.join(packageRoot(), 'capacity', 'prices.yaml');
    let report;
    try {
      const workload = parseWorkload(mergeInput(fromFile, nest(flags)), defaults);
      const choice = chooseAccounts({
        ...(typeof options.accountsFile === 'string' ? { explicitFile: options.accountsFile } : {}),
        ...(config.accountsFile ? { configuredFile: config.accountsFile } : {}),
        flagFields: accountFieldsIn(nest(flags)),
        fileFields: accountFieldsIn(fromFile),
      });
      let accounts: AccountsInput;
      if (choice.file === null) {
        // The lane's single account: LEASEHOLD_RATE_UNIT and LEASEHOLD_SEND_BATCH, as the registry builds it.
        accounts = singleAccount(workload, {
          failoverAfterSeconds: config.failoverAfterS,
          notes: choice.notes,
          unit: config.rateUnit,
          ...(config.sendBatch !== undefined ? { batch: config.sendBatch } : {}),
        });
      } else {
        const text = readText(choice.file, choice.source);
        const { accountsFromText } = await import('../../capacity/accounts-file.js');
        accounts = accountsFromText(text, choice.source, choice.file, config.failoverAfterS, choice.notes);
      }
      const prices = parsePrices(await readYaml(pricesFile, '--prices'));
      report = capacityModel(workload, prices, accounts);
    } catch (error) {
      // A bad accounts file is the same ConfigError the service gives, naming the field.
      if (error instanceof ValidationError || error instanceof ConfigError) throw new CliExit(EXIT_USAGE, `leasehold capacity: ${error.message}`);
      throw error;
    }
    if (options.json) {
      ctx.out(JSON.stringify({ pricesFile, ...report }, tidy, 2));
    } else {
      for (const line of options.detail ? renderReport(report) : renderSummary(report)) ctx.out(line);
      ctx.out(`Prices from ${pricesFile} (--prices <file> for your own copy). --json for machines.`);
    }
  });
}
