import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/docs.js';

/** test/ mirrors src/ (docs/testing.md): each folder of src/ has its folder of tests. */
describe('test/ mirrors src/', () => {
  it('every folder of src/ has its folder in test/', () => {
    const folders = readdirSync(path.join(ROOT, 'src'), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    expect(folders.length).toBeGreaterThan(15);
    expect(folders.filter((folder) => !existsSync(path.join(ROOT, 'test', folder)))).toEqual([]);
  });
});
