import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importCycles, layerPicture, layerViolations, readModules, unitCycles, unitOf, type SourceModule } from '../helpers/layers.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const modules = readModules(path.join(root, 'src'));

describe('layers', () => {
  it('no import in src/ runs up a layer or sideways into another unit', () => {
    expect(layerViolations(modules)).toEqual([]);
  });

  it('no import cycle between files', () => {
    expect(importCycles(modules)).toEqual([]);
  });

  it('no two folders import each other', () => {
    expect(unitCycles(modules)).toEqual([]);
  });

  it('the checks catch what they are for', () => {
    const fake = (file: string, imports: string[]): SourceModule => ({ file, ...unitOf(file), imports });
    const up = [fake('tables/holds.ts', ['delivery/worker.ts']), fake('delivery/worker.ts', [])];
    expect(layerViolations(up)).toEqual(['tables/holds.ts (tables) imports delivery/worker.ts (lanes)']);
    const pair = [fake('holds/holds.ts', ['delivery/worker.ts']), fake('delivery/worker.ts', ['holds/holds.ts'])];
    expect(layerViolations(pair)).toEqual([]);
    expect(unitCycles(pair)).toEqual([['delivery/', 'holds/']]);
    const circle = [fake('tables/a.ts', ['tables/b.ts']), fake('tables/b.ts', ['tables/a.ts'])];
    expect(importCycles(circle)).toEqual([['tables/a.ts', 'tables/b.ts']]);
    expect(() => unitOf('nowhere/x.ts')).toThrow(/belongs to no layer/);
  });

  it('docs/architecture.md draws the same layers', () => {
    const doc = fs.readFileSync(path.join(root, 'docs/architecture.md'), 'utf8');
    expect(doc).toContain(layerPicture());
  });
});
