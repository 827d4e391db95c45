import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The alert rules' unit tests (deploy/prometheus/alerts.test.yml), run by
 * Prometheus's own promtool: they evaluate the rules over series scraped from
 * two instances, so an alert that fires once per instance is caught. promtool
 * comes with Debian's prometheus package (.ci/run installs it); without it
 * this test is skipped and says why.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const promtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
const available = promtool.status === 0;
const reason = available ? '' : ' [skipped: promtool is not installed; apt-get install prometheus]';
if (!available) console.warn(`alert rule unit tests${reason}`);

describe('deploy/prometheus/alerts.yml under promtool', () => {
  it.skipIf(!available)(`passes promtool check rules${reason}`, () => {
    const result = spawnSync('promtool', ['check', 'rules', 'deploy/prometheus/alerts.yml'], { cwd: root, encoding: 'utf8' });
    expect(result.status, result.stdout + result.stderr).toBe(0);
  });

  it.skipIf(!available)(`passes its rule unit tests (alerts.test.yml)${reason}`, () => {
    const result = spawnSync('promtool', ['test', 'rules', 'deploy/prometheus/alerts.test.yml'], { cwd: root, encoding: 'utf8' });
    expect(result.status, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('SUCCESS');
  });
});
