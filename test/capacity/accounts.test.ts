import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { afterAll, describe, expect, it } from 'vitest';
import { accountsFromText } from '../../src/capacity/accounts-file.js';
import { chooseAccounts, PROVIDER_MAX_BATCH, singleAccount, type AccountsInput } from '../../src/capacity/accounts.js';
import { burstReport, capacityModel, steadyReport } from '../../src/capacity/model.js';
import { statementsReport } from '../../src/capacity/statements.js';
import { renderReport } from '../../src/capacity/render.js';
import { registerCapacity } from '../../src/cli/commands/capacity.js';
import { CliExit, type CommandContext } from '../../src/cli/context.js';
import { loadConfig } from '../../src/config.js';
import { ConfigError, ValidationError } from '../../src/errors.js';
import { PostmarkGateway, POSTMARK_MAX_BATCH } from '../../src/providers/postmark.js';
import { ResendGateway, RESEND_MAX_BATCH } from '../../src/providers/resend.js';
import { SandboxGateway } from '../../src/providers/sandbox.js';
import { SesGateway } from '../../src/providers/ses.js';
import { SmtpGateway } from '../../src/providers/smtp.js';
import { prices, workload } from '../helpers/capacity.js';

/**
 * Several provider accounts in the capacity model: each account's rate in
 * emails from its unit and batch, its daily quota, and the worst burst
 * through them the way the lane routes it (the first account sends, the
 * next ones only once the ones before stop).
 */

const fromFile = (text: string, failoverAfterSeconds = 60): AccountsInput => accountsFromText(text, '--accounts-file', 'accounts.yaml', failoverAfterSeconds);

// Secrets are references to variables nobody set: the model needs none.
const RESEND_AND_SES = `
accounts:
  - name: primary
    provider: resend
    apiKey: \${RESEND_KEY_NOBODY_SET}
    rate: { perSecond: 2, burst: 2, unit: requests }
    batch: 100
  - name: backup
    provider: ses
    region: us-east-1
    rate: { perSecond: 14, burst: 14, unit: emails }
    dailyQuota: 50000
failover: [primary, backup]
`;

describe('accounts and their units', () => {
  it('emails per request follow the gateways: Resend 100, Postmark 500, the others no batch API', () => {
    expect(PROVIDER_MAX_BATCH).toEqual({ sandbox: 1, resend: RESEND_MAX_BATCH, postmark: POSTMARK_MAX_BATCH, ses: 1, smtp: 1 });
    expect([RESEND_MAX_BATCH, POSTMARK_MAX_BATCH]).toEqual([100, 500]);
    expect(typeof ResendGateway.prototype.sendBatch).toBe('function');
    expect(typeof PostmarkGateway.prototype.sendBatch).toBe('function');
    for (const gateway of [SandboxGateway, SesGateway, SmtpGateway]) expect((gateway.prototype as { sendBatch?: unknown }).sendBatch).toBeUndefined();
  });

  it('a requests-unit Resend account with batch 100 against an emails-unit SES account with a daily quota', () => {
    const r = capacityModel(workload({ volume: { emailsPerDay: 0 } }), prices(), fromFile(RESEND_AND_SES)).accounts;
    const [resend, ses] = r.accounts;
    expect(resend).toMatchObject({
      name: 'primary',
      provider: 'resend',
      unit: 'requests',
      role: 'first',
      permitsPerSecond: 2,
      // A permit pays for a request of 100: 2 requests/s carry 200 emails/s, the burst of 2 requests 200 emails.
      emailsPerRequest: 100,
      emailsPerRequestFrom: 'batch',
      providerMaxBatch: 100,
      requestsPerSecond: 2,
      emailsPerSecond: 200,
      burstEmails: 200,
      dailyQuota: null,
      sustainedEmailsPerSecond: 200,
      fullRateQuotaSeconds: null,
    });
    expect(ses).toMatchObject({
      name: 'backup',
      provider: 'ses',
      unit: 'emails',
      role: 'backup',
      permitsPerSecond: 14,
      emailsPerRequest: 1,
      emailsPerRequestFrom: 'default',
      providerMaxBatch: 1,
      emailsPerSecond: 14,
      burstEmails: 14,
      dailyQuota: 50_000,
    });
    // The quota caps a sustained load at 50,000 / 86,400 = 0.58 emails/s; flat out it lasts 50,000 / 14 s.
    expect(ses!.quotaEmailsPerSecond).toBeCloseTo(50_000 / 86_400, 12);
    expect(ses!.sustainedEmailsPerSecond).toBeCloseTo(50_000 / 86_400, 12);
    expect(ses!.fullRateQuotaSeconds).toBeCloseTo(50_000 / 14, 9);
    expect(r.combined.emailsPerSecond).toBe(214);
    expect(r.combined.sustainedEmailsPerSecond).toBeCloseTo(200 + 50_000 / 86_400, 9);
    expect(r.combined.note).toMatch(/ceiling the lane does not use: new intents go to the first account/);
    expect(r.notes).toEqual([]);
    expect(r.assumptions.join('\n')).toMatch(/a requests-unit account's permit pays for one request whatever its size/);
  });

  it('without batch the provider maximum; batch 1 turns batching off; an emails-unit rate ignores batch', () => {
    const r = capacityModel(
      workload({ volume: { emailsPerDay: 0 } }),
      prices(),
      fromFile(`
accounts:
  - { name: plain, provider: resend, apiKey: "\${K}", rate: { perSecond: 2, burst: 2 } }
  - { name: off, provider: resend, apiKey: "\${K}", rate: { perSecond: 10, burst: 10 }, batch: 1 }
  - { name: pm, provider: postmark, serverToken: "\${T}", rate: { perSecond: 2, burst: 4, unit: emails }, batch: 50 }
  - { name: pmmax, provider: postmark, serverToken: "\${T}", rate: { perSecond: 1, burst: 1 } }
  - { name: mail, provider: ses, region: us-east-1, rate: { perSecond: 14, burst: 14 } }
`),
    ).accounts;
    const [plain, off, pm, pmmax, mail] = r.accounts;
    expect(plain).toMatchObject({ unit: 'requests', emailsPerRequest: 100, emailsPerRequestFrom: 'default', emailsPerSecond: 200, burstEmails: 200, requestsPerSecond: 2 });
    expect(off).toMatchObject({ emailsPerRequest: 1, emailsPerRequestFrom: 'batch', emailsPerSecond: 10, burstEmails: 10, requestsPerSecond: 10 });
    // Permits are emails: 2 emails/s whatever the batch, in requests of 50: one every 25 s.
    expect(pm).toMatchObject({ unit: 'emails', emailsPerRequest: 50, emailsPerSecond: 2, burstEmails: 4, requestsPerSecond: 2 / 50 });
    expect(pmmax).toMatchObject({ emailsPerRequest: 500, emailsPerRequestFrom: 'default', emailsPerSecond: 500, burstEmails: 500 });
    expect(mail).toMatchObject({ emailsPerRequest: 1, emailsPerRequestFrom: 'default', emailsPerSecond: 14 });
    const text = renderReport(capacityModel(workload({ volume: { emailsPerDay: 0 } }), prices(), fromFile(`
accounts:
  - { name: plain, provider: resend, apiKey: "\${K}", rate: { perSecond: 2, burst: 2 } }
  - { name: off, provider: resend, apiKey: "\${K}", rate: { perSecond: 10, burst: 10 }, batch: 1 }
  - { name: mail, provider: ses, region: us-east-1, rate: { perSecond: 14, burst: 14 } }
`))).join('\n');
    expect(text).toMatch(/plain \(first\)\s+resend\s+requests\s+2\.0\s+2\s+100 \(resend maximum\)\s+200\s/);
    expect(text).toMatch(/off\s+resend\s+requests\s+10\.0\s+10\s+1 \(batch 1: off\)\s+10\.0\s/);
    expect(text).toMatch(/mail\s+ses\s+requests\s+14\.0\s+14\s+1 \(no batch API\)\s+14\.0\s/);
  });

  it.each([
    ['resend', 'apiKey: "${K}"', 250, 'accounts.big.batch: resend takes at most 100 emails per request; the delivery lane refuses to start with it'],
    ['postmark', 'serverToken: "${T}"', 501, 'accounts.big.batch: postmark takes at most 500 emails per request; the delivery lane refuses to start with it'],
    ['ses', 'region: us-east-1', 2, 'accounts.big.batch: ses has no batch API: use 1; the delivery lane refuses to start with it'],
  ])('a %s batch above the provider maximum (%s %i) is an error naming the field, as the lane refuses it', (provider, setting, batch, message) => {
    const text = `accounts:\n  - { name: ok, provider: ses, region: us-east-1, rate: { perSecond: 14, burst: 14 } }\n  - { name: big, provider: ${provider}, ${setting}, rate: { perSecond: 10, burst: 10 }, batch: ${batch} }\n`;
    try {
      fromFile(text);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).message).toBe(`--accounts-file: ${message}`);
    }
    // Outside failover the lane never builds the account, so it cannot refuse it.
    expect(fromFile(`${text}failover: [ok]\n`).notInFailover).toEqual(['big']);
  });

  it('the first account sets the provider fields the sending rate, burst and cost lines read, in emails', () => {
    const report = capacityModel(workload({ volume: { emailsPerDay: 0 }, burst: { holds: 5000 } }), prices(), fromFile(RESEND_AND_SES));
    expect(report.workload.provider).toMatchObject({ name: 'resend', perSecond: 200, burst: 200 });
    expect(report.workload.provider.dailyQuota).toBeUndefined();
    expect(report.steady.pacedBy).toBe('limiter');
    // (5,000 - a burst of 2 x 100) / 200 emails/s.
    expect(report.burst!.drainSeconds).toBe((5000 - 200) / 200);
    expect(report.costs[0]!.lines.find((l) => l.item.startsWith('email'))!.item).toBe('email (resend)');
    expect(report.unknowns[0]).toMatch(/^How full the batches are: the figures count full batches \(primary 100 emails per request\)/);
  });

  it('batches are paced by the workers when a round carries one: a round leases at most the larger of its size and one batch', () => {
    // 10 requests/s x 100 = 1,000 emails/s granted; a round (min(50, 8) = 8 slots) leases max(8, 100) = 100
    // emails, one request, and each worker runs one round at a time: 2 x 100 / 0.204 s = 980 emails/s.
    const report = capacityModel(
      workload({ volume: { emailsPerDay: 0 }, burst: { holds: 10_000 } }),
      prices(),
      fromFile('accounts:\n  - { name: a, provider: resend, apiKey: "${K}", rate: { perSecond: 10, burst: 10 } }\n'),
    );
    expect(report.burst).toMatchObject({ limiterPerSecond: 1000, limiterBurst: 1000, pacedBy: 'workers' });
    expect(report.burst!.deliveryCapacityPerSecond).toBeCloseTo((2 * 100) / 0.204, 9);
    expect(report.burst!.drainSeconds).toBeCloseTo(9000 / ((2 * 100) / 0.204), 9);
    expect(report.accounts.normal!.stages[0]).toMatchObject({ pacedBy: 'workers', burstEmails: 1000 });
    expect(report.accounts.normal!.drainSeconds).toBeCloseTo(report.burst!.drainSeconds!, 9);
    const text = renderReport(report).join('\n');
    expect(text).toMatch(/can send\s+980\.4\/s, paced by the workers \(2 x 1 request\(s\) in flight x 100 emails per request \/ 200 ms provider latency\)/);
    expect(text).toContain('a batch of 100 per free slot of min(batch, concurrency) = 8, at most max(8, 100) = 100 emails in 1 request(s)');
  });
});

describe('the worst burst through the accounts', () => {
  // Batching off on the backups (batch: 1): one email per request, so their permits are emails.
  const THREE = `
accounts:
  - { name: first, provider: ses, rate: { perSecond: 14, burst: 14, unit: emails } }
  - { name: second, provider: resend, apiKey: "\${K}", rate: { perSecond: 5, burst: 5 }, batch: 1 }
  - { name: third, provider: postmark, serverToken: "\${T}", rate: { perSecond: 50, burst: 50 }, batch: 1 }
`;

  it('normal operation: the first account sends it all, the others stand by', () => {
    const r = capacityModel(workload({ volume: { emailsPerDay: 0 }, burst: { holds: 5000 } }), prices(), fromFile(THREE)).accounts;
    expect(r.normal!.stages).toHaveLength(1);
    expect(r.normal!.drainSeconds).toBeCloseTo(4986 / 14, 9); // 356 s: the single-account figure
    expect(r.normal!.verdict).toBe('meets');
    expect(r.accounts.map((a) => a.normalShare)).toEqual([1, 0, 0]);
    expect(r.accounts[0]!.takeover).toBeNull();
  });

  it('takeover: each backup drains the whole burst alone at its own rate, later still after a 429 cooldown', () => {
    const r = capacityModel(workload({ volume: { emailsPerDay: 0 }, burst: { holds: 5000 } }), prices(), fromFile(THREE, 60)).accounts;
    const second = r.accounts[1]!.takeover!;
    expect(second.stopped).toEqual(['first']);
    // (5,000 - burst 5) / 5/s = 999 s: past the 900 s promise.
    expect(second.drainSeconds).toBe(999);
    expect(second.oldestEmailAgeSeconds).toBe(999);
    expect(second.verdict).toBe('misses');
    // Intents leave a cooling-down account only LEASEHOLD_FAILOVER_AFTER_S after the cooldown began.
    expect(second.afterCooldown).toEqual({ oldestEmailAgeSeconds: 1059, verdict: 'misses' });
    const third = r.accounts[2]!.takeover!;
    expect(third.stopped).toEqual(['first', 'second']);
    expect(third.drainSeconds).toBe((5000 - 50) / 50); // 99 s
    expect(third.verdict).toBe('meets');
  });

  it('a batching backup takes over in emails: 5 requests/s of 100', () => {
    const r = capacityModel(
      workload({ volume: { emailsPerDay: 0 }, burst: { holds: 5000 } }),
      prices(),
      fromFile(THREE.replace('rate: { perSecond: 5, burst: 5 }, batch: 1', 'rate: { perSecond: 5, burst: 5 }')),
    ).accounts;
    const second = r.accounts[1]!.takeover!;
    // (5,000 - burst 5 x 100) / 500 emails/s = 9 s; the workers carry 2 x 100 / 0.204 s = 980/s, more than the limiter grants.
    expect(second.stages[0]).toMatchObject({ account: 'second', burstEmails: 500, sendRatePerSecond: 500, pacedBy: 'limiter' });
    expect(second.drainSeconds).toBe(9);
    expect(second.verdict).toBe('meets');
  });

  it('average demand keeps arriving at whichever account sends', () => {
    // 86,400 emails a day = 1/s: the second account drains at 5 - 1 = 4/s.
    const r = capacityModel(workload({ volume: { emailsPerDay: 86_400 }, burst: { holds: 1005 } }), prices(), fromFile(THREE)).accounts;
    expect(r.accounts[1]!.takeover!.stages[0]!.drainRatePerSecond).toBe(4);
    expect(r.accounts[1]!.takeover!.drainSeconds).toBe(250);
  });

  it("a daily quota that runs out mid-burst moves the rest to the next account (the provider's pause)", () => {
    const r = capacityModel(
      workload({ volume: { emailsPerDay: 0 }, burst: { holds: 5000 } }),
      prices(),
      fromFile(`
accounts:
  - { name: ses-main, provider: ses, rate: { perSecond: 14, burst: 14, unit: emails }, dailyQuota: 3000 }
  - { name: resend-backup, provider: resend, apiKey: "\${K}", rate: { perSecond: 5, burst: 5 }, batch: 1 }
`),
    ).accounts;
    const [ses, resend] = r.normal!.stages;
    expect(ses).toMatchObject({ account: 'ses-main', emails: 3000, quotaRunsOut: true });
    expect(ses!.seconds).toBeCloseTo((3000 - 14) / 14, 9);
    expect(resend).toMatchObject({ account: 'resend-backup', emails: 2000, quotaRunsOut: false, seconds: (2000 - 5) / 5 });
    expect(r.normal!.drainSeconds).toBeCloseTo((3000 - 14) / 14 + 399, 9); // 612 s
    expect(r.accounts.map((a) => a.normalShare)).toEqual([0.6, 0.4]);
  });

  it('the first account has used the day\'s demand of its quota; when every quota runs out the rest waits', () => {
    const r = capacityModel(
      workload({ volume: { emailsPerDay: 1000 }, burst: { holds: 5000 } }),
      prices(),
      fromFile(`
accounts:
  - { name: a, provider: ses, rate: { perSecond: 14, burst: 14, unit: emails }, dailyQuota: 3000 }
  - { name: b, provider: ses, rate: { perSecond: 14, burst: 14, unit: emails }, dailyQuota: 1500 }
`),
    ).accounts;
    expect(r.accounts.map((a) => a.quotaLeftAtBurst)).toEqual([2000, 1500]);
    expect(r.normal!.stages.map((s) => s.emails)).toEqual([2000, 1500]);
    expect(r.normal).toMatchObject({ unsentEmails: 1500, drainSeconds: null, verdict: 'quota-exhausted' });
  });

  it('text: the per-account table, the normal and takeover drains, the labels', () => {
    const lines = renderReport(capacityModel(workload({ volume: { emailsPerDay: 0 }, burst: { holds: 5000 } }), prices(), fromFile(RESEND_AND_SES)));
    const text = lines.join('\n');
    expect(text).toContain('Provider accounts (--accounts-file accounts.yaml), in failover order');
    expect(text).toMatch(/account\s+provider\s+unit\s+permits\/s\s+burst\s+emails\/request\s+emails\/s\s+daily quota\s+burst share/);
    expect(text).toMatch(/primary \(first\)\s+resend\s+requests\s+2\.0\s+2\s+100 \(batch\)\s+200\s+none\s+100%/);
    expect(text).toMatch(/backup\s+ses\s+emails\s+14\.0\s+14\s+1 \(no batch API\)\s+14\.0\s+50,000 \(0\.58\/s sustained, 59m31s at full rate\)\s+0%/);
    expect(text).toMatch(/burst, normal\s+primary \(5,000 - burst 200\) \/ 200\.00\/s = 24\.0s; oldest email 24\.0s against the 15m0s promise: meets/);
    expect(text).toMatch(/burst, backup takes over\s+\(primary stopped\) backup \(5,000 - burst 14\) \/ 14\.00\/s = 5m56s; .*after a 429 cooldown \(60 s before intents move\): oldest 6m56s, meets/);
    expect(text).toContain('2 account(s), first primary (resend) at 200 emails/s burst 200');
    expect(text).not.toMatch(/not built|not sent yet|does not batch/);
    expect(text).toMatch(/How full the batches are/);
  });
});

describe('one account, as before', () => {
  it('without accounts the model is the single-account one, unchanged', () => {
    const w = workload({ volume: { emailsPerDay: 20_000 }, burst: { holds: 5000 }, provider: { name: 'ses', perSecond: 14, burst: 14, dailyQuota: 50_000 } });
    const report = capacityModel(w, prices());
    expect(report.workload).toBe(w);
    expect(report.burst).toEqual(burstReport(w));
    expect(report.steady).toEqual(steadyReport(w));
    expect(report.statements).toEqual(statementsReport(w, burstReport(w)));
    expect(capacityModel(w, prices(), singleAccount(w))).toEqual(report);
    expect(report.accounts).toMatchObject({ source: 'flags', file: null, failover: ['default'] });
    expect(report.accounts.accounts[0]).toMatchObject({ provider: 'ses', unit: 'requests', emailsPerRequest: 1, emailsPerSecond: 14, dailyQuota: 50_000 });
    // The text has no accounts section: the header and the sending rate say it all.
    expect(renderReport(report).join('\n')).not.toContain('Provider accounts');
  });

  it('the single account is the lane\'s: a Resend account batches 100 per request unless LEASEHOLD_SEND_BATCH says otherwise', () => {
    const w = workload({ volume: { emailsPerDay: 0 }, burst: { holds: 5000 }, provider: { name: 'resend', perSecond: 2, burst: 2 } });
    const report = capacityModel(w, prices());
    expect(report.accounts.accounts[0]).toMatchObject({ name: 'default', unit: 'requests', emailsPerRequest: 100, emailsPerRequestFrom: 'default', emailsPerSecond: 200, burstEmails: 200 });
    // The sections read the account in emails; the permits are in the accounts line.
    expect(report.workload.provider).toMatchObject({ name: 'resend', perSecond: 200, burst: 200 });
    expect(report.burst!.drainSeconds).toBe((5000 - 200) / 200);
    expect(report.accounts.notes).toEqual([
      'default sends 100 emails per request (the resend maximum; LEASEHOLD_SEND_BATCH=1 turns batching off); its permits count requests (LEASEHOLD_RATE_UNIT), so its rate and burst in emails are the given ones x 100',
    ]);
    const text = renderReport(report).join('\n');
    expect(text).toContain('resend at 2.0 requests/s x 100 emails per request = 200 emails/s, burst 2 requests = 200 emails');
    expect(text).toContain('Provider accounts: one, from the provider fields');

    // Batching off, or permits in emails: the rate given is the rate in emails.
    const off = capacityModel(w, prices(), singleAccount(w, { batch: 1 }));
    expect(off.workload).toBe(w);
    expect(off.burst!.drainSeconds).toBe((5000 - 2) / 2);
    const emails = capacityModel(w, prices(), singleAccount(w, { unit: 'emails' }));
    expect(emails.workload).toBe(w);
    expect(emails.accounts.accounts[0]).toMatchObject({ unit: 'emails', emailsPerRequest: 100, emailsPerSecond: 2, requestsPerSecond: 0.02 });

    // A batch the lane would refuse names LEASEHOLD_SEND_BATCH.
    expect(() => singleAccount(w, { batch: 101 })).toThrow(new ConfigError('LEASEHOLD_SEND_BATCH', 'resend takes at most 100 emails per request; the delivery lane refuses to start with it'));
    const ses = workload({ volume: { emailsPerDay: 0 }, provider: { name: 'ses' } });
    expect(() => singleAccount(ses, { batch: 2 })).toThrow('LEASEHOLD_SEND_BATCH: ses has no batch API: use 1');
  });

  it('which accounts: --accounts-file, else LEASEHOLD_ACCOUNTS_FILE unless provider fields describe one account, else the flags', () => {
    expect(chooseAccounts({ flagFields: [], fileFields: [] })).toEqual({ file: null, source: 'flags', notes: [] });
    expect(chooseAccounts({ configuredFile: 'a.yaml', flagFields: [], fileFields: [] })).toEqual({ file: 'a.yaml', source: 'LEASEHOLD_ACCOUNTS_FILE', notes: [] });
    const flags = chooseAccounts({ configuredFile: 'a.yaml', flagFields: ['provider.perSecond'], fileFields: [] });
    expect(flags).toMatchObject({ file: null, source: 'flags' });
    expect(flags.notes[0]).toMatch(/LEASEHOLD_ACCOUNTS_FILE \(a\.yaml\) not modelled: provider\.perSecond given/);
    const explicit = chooseAccounts({ explicitFile: 'b.yaml', configuredFile: 'a.yaml', flagFields: [], fileFields: ['provider.name'] });
    expect(explicit).toMatchObject({ file: 'b.yaml', source: '--accounts-file' });
    expect(explicit.notes).toEqual(['provider.name from --file replaced by the accounts in --accounts-file']);
    try {
      chooseAccounts({ explicitFile: 'b.yaml', flagFields: ['provider.perSecond'], fileFields: [] });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe('provider.perSecond (--per-second)');
    }
  });
});

describe('a bad accounts file', () => {
  const configError = (text: string): ConfigError => {
    try {
      fromFile(text);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return error as ConfigError;
    }
    throw new Error('expected a ConfigError');
  };

  it.each([
    ['accounts:\n  - { name: a, provider: ses, rate: { perSecond: 14, burst: 14, unit: bytes } }\n', 'accounts[0].rate.unit: must be requests or emails'],
    ['accounts:\n  - { name: a, provider: ses, rate: { perSecond: 14, burst: 14 } }\n  - { name: b, provider: mailgun, rate: { perSecond: 1, burst: 1 } }\n', 'accounts[1].provider: must be one of'],
    ['accounts:\n  - { name: a, provider: ses, rate: { perSecond: 14, burst: 14 }, dailyQuota: 2.5 }\n', 'accounts[0].dailyQuota: must be a whole number of emails'],
    ['accounts:\n  - { name: a, provider: resend, apiKey: "\${K}", rate: { perSecond: 10, burst: 10 }, batch: 0 }\n', 'accounts[0].batch: must be at least 1'],
    ['accounts:\n  - { name: a, provider: ses, rate: { perSecond: 14, burst: 14 } }\nfailover: [a, b]\n', 'failover[1]: "b" is not an account in this file'],
    // The same parser as the service: a literal secret is refused even here.
    ['accounts:\n  - { name: a, provider: resend, apiKey: re_live_123, rate: { perSecond: 10, burst: 10 } }\n', 'accounts[0].apiKey: is a secret'],
  ])('%j: a ConfigError naming the field', (text, message) => {
    const error = configError(text);
    expect(error.variable).toBe('--accounts-file');
    expect(error.message).toContain(`--accounts-file: ${message}`);
  });
});

describe('leasehold capacity --accounts-file (the command, in process)', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-capacity-accounts-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const accountsFile = file('accounts.yaml', RESEND_AND_SES);
  const env = { LEASEHOLD_RATE_PER_SECOND: '10', LEASEHOLD_RATE_BURST: '10', LEASEHOLD_EMAIL_PROMISE_S: '900', EMAIL_PROVIDER: 'sandbox', DATABASE_URL: '' };

  async function capacity(args: string[], extra: Record<string, string> = {}): Promise<{ code: number; out: string; error: string }> {
    const out: string[] = [];
    const ctx = { config: loadConfig({ ...env, ...extra }), out: (line: string) => out.push(line) } as unknown as CommandContext;
    const program = new Command('leasehold').exitOverride();
    registerCapacity(program, () => ctx);
    try {
      await program.parseAsync(['node', 'leasehold', 'capacity', ...args]);
      return { code: 0, out: out.join('\n'), error: '' };
    } catch (error) {
      if (error instanceof CliExit) return { code: error.code, out: out.join('\n'), error: error.message };
      throw error;
    }
  }

  it('--json: the accounts beside the rest of the report', async () => {
    const res = await capacity(['--emails-per-day', '0', '--burst-holds', '5000', '--accounts-file', accountsFile, '--json']);
    expect(res.code).toBe(0);
    const report = JSON.parse(res.out);
    expect(report.accounts).toMatchObject({ source: '--accounts-file', file: accountsFile, failover: ['primary', 'backup'] });
    // 2 requests/s x 100 emails per request.
    expect(report.accounts.accounts.map((a: { emailsPerSecond: number }) => a.emailsPerSecond)).toEqual([200, 14]);
    expect(report.accounts.accounts.map((a: { emailsPerRequest: number }) => a.emailsPerRequest)).toEqual([100, 1]);
    expect(report.accounts.normal.drainSeconds).toBe((5000 - 200) / 200);
    expect(report.accounts.accounts[1].takeover.drainSeconds).toBeCloseTo(4986 / 14, 3);
    expect(report.workload.provider).toMatchObject({ name: 'resend', perSecond: 200, burst: 200 });
  });

  it('LEASEHOLD_ACCOUNTS_FILE is the default; provider flags model one account instead, and say so', async () => {
    const configured = await capacity(['--emails-per-day', '100', '--json'], { LEASEHOLD_ACCOUNTS_FILE: accountsFile });
    expect(JSON.parse(configured.out).accounts).toMatchObject({ source: 'LEASEHOLD_ACCOUNTS_FILE', failover: ['primary', 'backup'] });
    const flags = await capacity(['--emails-per-day', '100', '--per-second', '3', '--detail'], { LEASEHOLD_ACCOUNTS_FILE: accountsFile });
    expect(flags.out).toContain('sandbox at 3/s burst 10');
    // The summary says what was modelled too.
    const summary = await capacity(['--emails-per-day', '100', '--per-second', '3'], { LEASEHOLD_ACCOUNTS_FILE: accountsFile });
    expect(summary.out).toContain(`LEASEHOLD_ACCOUNTS_FILE (${accountsFile}) not modelled`);
    expect(flags.out).toContain(`LEASEHOLD_ACCOUNTS_FILE (${accountsFile}) not modelled: provider.perSecond given, describing one account`);
  });

  it('without an accounts file, the configured unit and batch of the single account (LEASEHOLD_RATE_UNIT, LEASEHOLD_SEND_BATCH)', async () => {
    const args = ['--emails-per-day', '0', '--burst-holds', '5000', '--provider', 'resend', '--per-second', '2', '--burst', '2', '--json'];
    const batched = JSON.parse((await capacity(args)).out);
    expect(batched.accounts.accounts[0]).toMatchObject({ name: 'default', unit: 'requests', emailsPerRequest: 100, emailsPerSecond: 200 });
    expect(batched.burst).toMatchObject({ limiterPerSecond: 200, limiterBurst: 200, drainSeconds: 24 });
    const set = JSON.parse((await capacity(args, { LEASEHOLD_SEND_BATCH: '10' })).out);
    expect(set.accounts.accounts[0]).toMatchObject({ emailsPerRequest: 10, emailsPerRequestFrom: 'batch', emailsPerSecond: 20 });
    const emails = JSON.parse((await capacity(args, { LEASEHOLD_RATE_UNIT: 'emails' })).out);
    expect(emails.accounts.accounts[0]).toMatchObject({ unit: 'emails', emailsPerRequest: 100, emailsPerSecond: 2 });
    expect(emails.burst).toMatchObject({ limiterPerSecond: 2, drainSeconds: 2499 });
  });

  it.each([
    [['--accounts-file', 'BAD'], {}, 'leasehold capacity: --accounts-file: accounts[0].rate.unit: must be requests or emails'],
    [[], { LEASEHOLD_ACCOUNTS_FILE: 'BAD' }, 'leasehold capacity: LEASEHOLD_ACCOUNTS_FILE: accounts[0].rate.unit: must be requests or emails'],
    [['--accounts-file', 'ACCOUNTS', '--burst', '4'], {}, 'leasehold capacity: provider.burst (--burst): each account in --accounts-file sets'],
    [['--accounts-file', 'MISSING'], {}, 'leasehold capacity: --accounts-file: cannot read'],
    [['--accounts-file', 'BIG'], {}, 'leasehold capacity: --accounts-file: accounts.a.batch: resend takes at most 100 emails per request; the delivery lane refuses to start with it'],
    [['--provider', 'resend'], { LEASEHOLD_SEND_BATCH: '500' }, 'leasehold capacity: LEASEHOLD_SEND_BATCH: resend takes at most 100 emails per request'],
  ])('%j %j exits 2 with one line naming the field', async (args, extra, message) => {
    const bad = file('bad.yaml', 'accounts:\n  - { name: a, provider: ses, rate: { perSecond: 14, burst: 14, unit: bytes } }\n');
    const big = file('big.yaml', 'accounts:\n  - { name: a, provider: resend, apiKey: "${K}", rate: { perSecond: 2, burst: 2 }, batch: 250 }\n');
    const swap = (s: string) =>
      s === 'BAD' ? bad : s === 'ACCOUNTS' ? accountsFile : s === 'MISSING' ? path.join(dir, 'missing.yaml') : s === 'BIG' ? big : s;
    const res = await capacity(
      ['--emails-per-day', '10', ...args.map(swap)],
      Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, swap(v)])),
    );
    expect(res.code).toBe(2);
    expect(res.out).toBe('');
    expect(res.error).toContain(message);
  });
});
