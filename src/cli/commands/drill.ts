import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import type { DrillApi } from '../../drill/client.js';
import type { EmbeddedDeployment } from '../../drill/embedded.js';
import { REPORT_FILES, renderDrillReport } from '../../drill/report.js';
import type { ContextFactory } from '../context.js';
import { CliExit, EXIT_FAILURE, EXIT_USAGE } from '../context.js';
import { burstArg, droppableSchema, perSecondArg } from './args.js';

interface DrillCliOptions {
  url?: string;
  token?: string;
  holdWindow: number;
  holds: number;
  rate: number;
  burst: number;
  out: string;
  json?: boolean;
  schema: string;
}

const wholeArg = (min: number, max: number) => (value: string) => {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`must be a whole number from ${min} to ${max}`);
  return n;
};

function urlArg(value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol === 'http:' || url.protocol === 'https:') return value;
  } catch {
    // fall through
  }
  throw new InvalidArgumentError('must be an http(s) URL such as http://127.0.0.1:8787');
}

// The embedded deployment's expiry promise: the expiry lane runs every half second.
const EMBEDDED_EXPIRY_PROMISE_S = 5;

/**
 * `leasehold drill`: the operational drill of the design brief, automated
 * (src/drill/). Against a running deployment through its API (--url and
 * --token), or by default against a fresh one started in this process on
 * the sandbox provider. Exits 0 only if every criterion held.
 */
export function registerDrill(program: Command, context: ContextFactory): void {
  program
    .command('drill')
    .description(
      'pause delivery, let intents pile up past one hold window, resume at a set rate, and check expiry stayed on time, ' +
        'no 1 s window went over burst + rate and the oldest age recovered in the predicted drain time; writes a report and chart',
    )
    .option('--url <baseUrl>', 'drill a running deployment through its API (default: a fresh embedded one, sandbox provider)', urlArg)
    .option('--token <token>', 'API token for --url (default LEASEHOLD_API_TOKEN)')
    .option('--hold-window <seconds>', 'the holds\' window (ttlSeconds); delivery stays paused one more window after they fall due', wholeArg(1, 3600), 10)
    .option('--holds <n>', 'holds to create while paused', wholeArg(1, 100_000), 50)
    .option('--rate <perSecond>', 'shared send rate during the drill (put back afterwards)', perSecondArg, 5)
    .option('--burst <n>', 'limiter burst during the drill', burstArg, 5)
    .option('--out <dir>', `directory for the report (${REPORT_FILES.markdown}, ${REPORT_FILES.chart}, ${REPORT_FILES.data})`, 'drill-report')
    .option('--json', 'print the verdict as JSON on stdout (progress goes to stderr)')
    .option('--schema <name>', 'embedded mode: schema for the drill, ending in _drill (dropped and recreated)', 'leasehold_drill')
    .action(async (options: DrillCliOptions) => {
      const [{ renderDrillChart }, { DrillApi }, { runDrill }] = await Promise.all([
        import('../../drill/chart.js'),
        import('../../drill/client.js'),
        import('../../drill/run.js'),
      ]);
      const stdout = (line: string) => process.stdout.write(line + '\n');
      const progress = options.json ? (line: string) => process.stderr.write(line + '\n') : stdout;
      const policy = { perSecond: options.rate, burst: options.burst };
      let target: string;
      let api: DrillApi;
      let embedded: EmbeddedDeployment | undefined;
      let closeDatabase: (() => Promise<void>) | undefined;

      if (options.url) {
        const token = options.token ?? context().config.apiToken;
        if (!token) throw new CliExit(EXIT_USAGE, 'leasehold drill: --url needs --token (or LEASEHOLD_API_TOKEN)');
        api = new DrillApi(options.url, token);
        target = options.url;
      } else {
        if (options.token) throw new CliExit(EXIT_USAGE, 'leasehold drill: --token goes with --url');
        droppableSchema('drill', 'drill', options.schema);
        const ctx = context();
        const db = await ctx.database({ poolSize: 12, migrations: 'none' });
        closeDatabase = () => db.close();
        try {
          const { startEmbeddedDeployment } = await import('../../drill/embedded.js');
          embedded = await startEmbeddedDeployment({
            config: ctx.config,
            pool: db.pool,
            url: db.url,
            schema: options.schema,
            policy,
            // The email promise is one hold window: the pause is meant to break it, the drain to restore it.
            promises: { expiryPromiseS: EMBEDDED_EXPIRY_PROMISE_S, emailPromiseS: options.holdWindow },
          });
        } catch (error) {
          await db.close();
          throw error;
        }
        api = new DrillApi(embedded.url, embedded.token);
        target = `a fresh embedded deployment (schema ${options.schema}, sandbox provider)`;
      }

      progress(`leasehold drill against ${target}`);
      let run;
      try {
        run = await runDrill({ api, holdWindowS: options.holdWindow, holds: options.holds, policy, progress });
      } finally {
        await embedded?.close();
        await closeDatabase?.();
      }

      const { observations: o, verdict } = run;
      await mkdir(options.out, { recursive: true });
      const files = {
        markdown: path.join(options.out, REPORT_FILES.markdown),
        chart: path.join(options.out, REPORT_FILES.chart),
        data: path.join(options.out, REPORT_FILES.data),
      };
      await writeFile(files.markdown, renderDrillReport(run, target));
      await writeFile(
        files.chart,
        renderDrillChart({
          title: `leasehold drill ${run.runId}: ${verdict.passed ? 'passed' : 'FAILED'}`,
          durationS: run.durationS,
          pausedFrom: o.pausedAt,
          pausedTo: o.resumedAt,
          samples: o.samples,
          sends: run.sends,
          policy: o.policy,
          promises: o.promises,
        }),
      );
      await writeFile(files.data, JSON.stringify({ runId: run.runId, target, startedAt: run.startedAt, durationS: run.durationS, verdict, observations: o }, null, 2) + '\n');

      if (options.json) {
        stdout(JSON.stringify({ passed: verdict.passed, runId: run.runId, criteria: verdict.criteria, files }, null, 2));
      } else {
        for (const c of verdict.criteria) stdout(`${c.passed ? 'pass' : 'FAIL'}  ${c.name}: ${c.observed}`);
        stdout(`report: ${files.markdown} (chart ${files.chart})`);
      }
      if (!verdict.passed) {
        const failed = verdict.criteria.filter((c) => !c.passed).map((c) => c.name);
        throw new CliExit(EXIT_FAILURE, `leasehold drill: FAILED (${failed.join(', ')})`);
      }
    });
}
