import { readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { describeProblem } from '../../src/templates/source.js';
import { loadTemplates } from '../../src/templates/templates.js';
import { TemplateRenderError } from '../../src/templates/render.js';
import { runCliInProcess } from '../helpers/cli.js';
import { input, templateFiles, writeTemplateDir } from '../helpers/templates.js';

const KIND = 'reservation-expired';

/** Shared en and de; acme overrides en only, and has a second kind directory of its own under tenants/. */
const files = {
  ...templateFiles({ subject: 'Shared en {{ holdId }}' }),
  ...templateFiles({ locale: 'de', subject: 'Shared de {{ holdId }}' }),
  [`tenants/acme/${KIND}/en/subject.liquid`]: 'Acme en {{ holdId }}',
  [`tenants/acme/${KIND}/en/text.liquid`]: 'Acme text',
  [`tenants/acme/${KIND}/en/html.liquid`]: '<p>Acme</p>',
  [`tenants/acme/${KIND}/meta.json`]: JSON.stringify({ from: 'Acme <hello@acme.example>' }),
};

const dirs: string[] = [];
const dirOf = (set: Record<string, string>) => {
  const dir = writeTemplateDir(set);
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('templates per tenant', () => {
  it("renders a tenant's own template for that tenant only, read from tenants/<tenant>/ on disk", () => {
    const templates = loadTemplates({ dir: dirOf(files) });
    expect(templates.problems).toEqual([]);
    expect(templates.tenants()).toEqual(['acme']);

    const acme = templates.render(KIND, input({}, { tenant: 'acme' }));
    expect(acme).toMatchObject({ subject: 'Acme en hold-7f3a', text: 'Acme text\n', from: 'Acme <hello@acme.example>', templateLocale: 'en', templateTenant: 'acme' });

    for (const tenant of [undefined, '', 'globex']) {
      const other = templates.render(KIND, input({}, tenant === undefined ? {} : { tenant }));
      expect(other).toMatchObject({ subject: 'Shared en hold-7f3a', from: 'Support <support@example.com>', templateLocale: 'en' });
      expect(other.templateTenant).toBeUndefined();
      // The same files under a tenant are a version of their own; the shared version is what it was.
      expect(other.templateVersion).not.toBe(acme.templateVersion);
    }
  });

  it('falls back per kind and locale: the shared de for a tenant with only en, the shared kind for a tenant without it', () => {
    const templates = loadTemplates({ files });
    expect(templates.render(KIND, input({ locale: 'de-CH' }, { tenant: 'acme' }))).toMatchObject({ subject: 'Shared de hold-7f3a', templateLocale: 'de', locale: 'de-CH' });
    // A language the tenant and the shared set both lack: the tenant's default-locale template.
    expect(templates.render(KIND, input({ locale: 'fr' }, { tenant: 'acme' }))).toMatchObject({ subject: 'Acme en hold-7f3a', locale: 'en' });

    const deOnly = loadTemplates({
      files: { ...templateFiles(), ...Object.fromEntries(Object.entries(templateFiles({ locale: 'de', subject: 'Initech de' })).map(([f, c]) => [`tenants/initech/${f}`, c])) },
    });
    expect(deOnly.check()).toEqual([]);
    expect(deOnly.render(KIND, input({ locale: 'de' }, { tenant: 'initech' })).subject).toBe('Initech de');
    expect(deOnly.render(KIND, input({ locale: 'en' }, { tenant: 'initech' })).subject).toBe('Expired: hold-7f3a');
  });

  it("check finds a broken tenant template under tenants/<tenant>/, and rendering for that tenant fails as broken", () => {
    const templates = loadTemplates({
      files: {
        ...files,
        [`tenants/acme/${KIND}/en/text.liquid`]: 'Hello {{ custmer }}',
        [`tenants/acme/reservation-expird/en/subject.liquid`]: 'x',
        [`tenants/not a tenant/${KIND}/en/subject.liquid`]: 'x',
      },
    });
    const problems = templates.check().map(describeProblem);
    expect(problems).toContain(`tenants/acme/${KIND}/en/text.liquid: undefined variable: custmer, line:1, col:10`);
    expect(problems).toContainEqual(expect.stringMatching(/^tenants\/acme\/reservation-expird: is not a message kind/));
    expect(problems).toContainEqual(expect.stringMatching(/^tenants\/not a tenant: is not a tenant/));
    expect(() => templates.render(KIND, input({}, { tenant: 'acme' }))).toThrow(TemplateRenderError);
    expect(templates.render(KIND, input({}, { tenant: 'globex' })).subject).toBe('Shared en hold-7f3a');
  });
});

describe('leasehold templates check and preview with tenants', () => {
  const env = (dir: string) => ({ DATABASE_URL: 'postgres://unused@127.0.0.1:1/unused', LEASEHOLD_TEMPLATES_DIR: dir });

  it("check lists each tenant's templates and names the tenant's file in a problem", async () => {
    const ok = await runCliInProcess(['templates', 'check'], env(dirOf(files)));
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/tenant acme: reservation-expired: en \(version [0-9a-f]{16}\)/);

    const broken = dirOf({ ...files, [`tenants/acme/${KIND}/en/html.liquid`]: '{% if %}' });
    const res = await runCliInProcess(['templates', 'check'], env(broken));
    expect(res.code).toBe(2);
    expect(res.stdout).toContain(`problem: tenants/acme/${KIND}/en/html.liquid: invalid value expression`);
  });

  it('preview --tenant renders with the tenant templates', async () => {
    const out = path.join(os.tmpdir(), `leasehold-tenant-preview-${process.pid}.html`);
    const res = await runCliInProcess(['templates', 'preview', KIND, '--tenant', 'acme', '--out', out], env(dirOf(files)));
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain(`template tenants/acme/${KIND}/en`);
    expect(res.stdout).toContain('Subject: Acme en sample-hold');
    expect(readFileSync(out, 'utf8')).toBe('<p>Acme</p>\n');
    rmSync(out, { force: true });
  });
});
