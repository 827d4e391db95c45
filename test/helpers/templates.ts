import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RenderInput } from '../../src/templates/render.js';
import type { TemplateFiles } from '../../src/templates/source.js';

const KIND = 'reservation-expired';

/**
 * A one-locale template set: reservation-expired with the parts and meta a
 * test names, and minimal templates for the other kinds (a set must have
 * every kind, MESSAGE_KINDS) in the same locale, so that `check()` speaks
 * only of what the test wrote.
 */
export function templateFiles(
  parts: { subject?: string; text?: string; html?: string; meta?: unknown; localeMeta?: unknown; locale?: string } = {},
  extra: TemplateFiles = {},
): TemplateFiles {
  const locale = parts.locale ?? 'en';
  const files: TemplateFiles = {
    [`${KIND}/${locale}/subject.liquid`]: parts.subject ?? 'Expired: {{ holdId }}',
    [`${KIND}/${locale}/text.liquid`]: parts.text ?? 'Held until {{ expiresAt }}.',
    [`${KIND}/${locale}/html.liquid`]: parts.html ?? '<p>Held until {{ expiresAt }}.</p>',
    ...otherKinds(locale),
    ...extra,
  };
  if (parts.meta !== undefined) files[`${KIND}/meta.json`] = JSON.stringify(parts.meta);
  if (parts.localeMeta !== undefined) files[`${KIND}/${locale}/meta.json`] = JSON.stringify(parts.localeMeta);
  return files;
}

function otherKinds(locale: string): TemplateFiles {
  return {
    [`reservation-reminder/${locale}/subject.liquid`]: 'Expires {{ remaining.words }}',
    [`reservation-reminder/${locale}/text.liquid`]: 'Confirm by {{ expiresAt }}.',
    [`reservation-reminder/${locale}/html.liquid`]: '<p>Confirm by {{ expiresAt }}.</p>',
    [`reservation-confirmed/${locale}/subject.liquid`]: 'Confirmed',
    [`reservation-confirmed/${locale}/text.liquid`]: 'Confirmed{% if confirmedAt %} at {{ confirmedAt }}{% endif %}.',
    [`reservation-confirmed/${locale}/html.liquid`]: '<p>Confirmed.</p>',
  };
}

/** Write a template set to a fresh temporary directory (for LEASEHOLD_TEMPLATES_DIR). */
export function writeTemplateDir(files: TemplateFiles): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'leasehold-templates-'));
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), content);
  }
  return dir;
}

export function input(metadata: Record<string, unknown> = {}, overrides: Partial<RenderInput> = {}): RenderInput {
  return {
    intentId: `${KIND}:hold-7f3a`,
    holdId: 'hold-7f3a',
    metadata,
    // 09:40 UTC on a Tuesday in winter: 10:40 in Zurich, 04:40 in New York.
    expiresAt: new Date('2026-03-03T09:40:00Z'),
    expiredAt: new Date('2026-03-03T09:40:02Z'),
    from: 'Support <support@example.com>',
    ...overrides,
  };
}
