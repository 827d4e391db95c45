import { describe, expect, it } from 'vitest';
import { createEngines, markLenientLookups } from '../../src/templates/engine.js';
import { liquidjs } from '../../src/templates/liquid.js';
import { loadTemplates } from '../../src/templates/templates.js';
import { readTemplateDirectory } from '../../src/templates/source.js';
import { packageRoot } from '../../src/runtime/package-root.js';
import inspector from 'node:inspector';
import path from 'node:path';
import { input, templateFiles } from '../helpers/templates.js';

const KIND = 'reservation-expired';

// Every place LiquidJS reads a variable leniently (lenientIf), and two it does not.
const GUARDS =
  '{% if metadata.a.b %}1{% elsif metadata.x and metadata.name == "Ana" %}2{% endif %}{% unless metadata.u %}3{% endunless %}' +
  '{% case metadata.c %}{% when metadata.w, nil %}4{% endcase %}{% assign y = metadata.v %}{% if y == nil %}5{% endif %}' +
  '{{ metadata.d.e | default: 6 }}{% for i in (1..2) %}{% if metadata.f %}7{% endif %}{% endfor %}{% capture k %}{% if metadata.g %}8{% endif %}{% endcapture %}' +
  '{{ metadata.name | upcase }}{{ holdId }}';

describe('lenient lookups', () => {
  it('marks every variable LiquidJS reads leniently, and no output without a default', () => {
    const templates = createEngines({}).text.parse(GUARDS);
    expect(markLenientLookups(templates).sort()).toEqual(
      ['metadata.a.b', 'metadata.x', 'metadata.name', 'metadata.u', 'metadata.c', 'metadata.w', 'metadata.v', 'y', 'metadata.d.e', 'metadata.f', 'metadata.g'].sort(),
    );
  });

  it("renders what LiquidJS's own lenient reads give, with the keys missing and present", () => {
    const ours = loadTemplates({ files: templateFiles({ text: GUARDS }) });
    const { Liquid } = liquidjs();
    const plain = new Liquid({ strictVariables: true, lenientIf: true, ownPropertyOnly: true });
    for (const metadata of [{ name: 'Ana' }, { name: 'Ana', a: { b: 1 }, x: true, u: 1, c: 'q', w: 'q', v: 0, d: { e: 'E' }, f: 1, g: 1 }]) {
      const expected = plain.parseAndRenderSync(GUARDS, { metadata, holdId: 'hold-7f3a' });
      expect(ours.render(KIND, input(metadata)).text).toBe(`${expected}\n`);
    }
    // Outside a guard a missing key is still an error.
    expect(() => ours.render(KIND, input({}))).toThrow('undefined variable: metadata.name');
  });

  it('reads a marked lookup of a missing key without a throw; an unmarked one still throws and is caught', () => {
    // Every exception thrown while a render runs, caught or not, counted by pausing on it (an inspector session on this thread).
    const thrownDuring = (render: () => unknown): number => {
      const session = new inspector.Session();
      session.connect();
      let thrown = 0;
      session.on('Debugger.paused', ({ params }) => {
        if (params.reason === 'exception') thrown++;
        session.post('Debugger.resume');
      });
      session.post('Debugger.enable');
      session.post('Debugger.setPauseOnExceptions', { state: 'all' });
      try {
        render();
      } finally {
        session.post('Debugger.setPauseOnExceptions', { state: 'none' });
        session.post('Debugger.disable');
        session.disconnect();
      }
      return thrown;
    };
    const guarded = loadTemplates({ files: templateFiles({ text: '{% if metadata.a %}1{% endif %}{{ metadata.b | default: 2 }}{{ holdId }}' }) });
    // A computed path is built at render time: LiquidJS's own catch answers it, after a throw.
    const computed = loadTemplates({ files: templateFiles({ text: '{% assign k = "a" %}{% if metadata[k] %}1{% endif %}{{ holdId }}' }) });
    expect(guarded.render(KIND, input({})).text).toBe('2hold-7f3a\n');
    expect(computed.render(KIND, input({})).text).toBe('hold-7f3a\n');
    expect(thrownDuring(() => guarded.render(KIND, input({})))).toBe(0);
    expect(thrownDuring(() => computed.render(KIND, input({})))).toBeGreaterThan(0);
  });

  it("marks the shipped templates' guards on optional metadata", () => {
    const files = readTemplateDirectory(path.join(packageRoot(), 'templates')).files;
    const text = files[`${KIND}/en/text.liquid`]!;
    const marked = markLenientLookups(createEngines({}).text.parse(text));
    expect(new Set(marked)).toEqual(new Set(['metadata.name', 'metadata.slotAt', 'metadata.slot', 'metadata.rebookUrl']));
  });
});
