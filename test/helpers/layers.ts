import fs from 'node:fs';
import path from 'node:path';

/**
 * The layers of src/, lowest first. A module may import from its own unit
 * (the same folder), from a lower layer, or from another unit of its own
 * layer as long as no two units import each other; never upwards.
 * docs/architecture.md draws this table; the architecture test keeps the
 * two the same and the code inside it.
 */
export const LAYERS: ReadonlyArray<{ name: string; units: string[]; role: string }> = [
  { name: 'base', units: ['errors.ts', 'text.ts', 'format.ts', 'zod.ts', 'remember.ts'], role: 'error classes, text rules, number formatting, zod on first use, a bounded memo' },
  { name: 'model', units: ['model/'], role: 'states, input rules, rate and pause policy, address hashing: pure' },
  { name: 'infra', units: ['config.ts', 'config-schema.ts', 'defaults.ts', 'observability/', 'runtime/'], role: 'configuration, logger and metrics, clock, service loop, shutdown' },
  { name: 'db', units: ['db/'], role: 'pool, transactions, migrations, LISTEN, embedded PostgreSQL' },
  { name: 'tables', units: ['tables/'], role: 'one module per table: its named, parameterised statements' },
  { name: 'parts', units: ['templates/', 'providers/'], role: 'message rendering; the provider gateway and its adapters' },
  { name: 'lanes', units: ['holds/', 'delivery/', 'events/', 'retention/', 'webhooks/'], role: 'hold API and expiry lane; delivery lane; provider events; retention; webhooks to the application' },
  { name: 'read', units: ['read/', 'capacity/'], role: 'read models: lane stats, health, status, timeline, metrics; the capacity model' },
  { name: 'ops', units: ['ops/'], role: 'operator actions: pause, resume, replay, rate limit, accounts, tenants' },
  { name: 'client', units: ['client/'], role: 'the library API: createLeasehold and the free functions, one convention' },
  { name: 'orms', units: ['integrations/'], role: 'thin helpers for ORM transactions (Prisma, Drizzle, Kysely, Knex, postgres.js) over the SQL functions' },
  { name: 'server', units: ['server/'], role: 'HTTP API, webhooks and dashboard' },
  { name: 'service', units: ['service.ts', 'service-parts.ts'], role: 'the composition root: builds lanes and API from Config' },
  { name: 'tools', units: ['drill/', 'timers/'], role: 'leasehold drill; leasehold compare-timers (timers vs leases, measured)' },
  { name: 'entry', units: ['cli/', 'index.ts', 'server-entry.ts'], role: 'the leasehold command; the library entry points' },
];

export interface SourceModule {
  /** Path under src/, e.g. `tables/holds.ts`. */
  file: string;
  unit: string;
  layer: number;
  imports: string[];
}

export function unitOf(file: string): { unit: string; layer: number } {
  for (const [layer, { units }] of LAYERS.entries()) {
    for (const unit of units) {
      if (unit.endsWith('/') ? file.startsWith(unit) : file === unit) return { unit, layer };
    }
  }
  throw new Error(`src/${file} belongs to no layer: add its folder to LAYERS (test/helpers/layers.ts) and docs/architecture.md`);
}

/** Every module under src/ with its relative imports resolved to paths under src/. */
export function readModules(srcDir: string): SourceModule[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.ts')) files.push(path.relative(srcDir, full));
    }
  };
  walk(srcDir);
  return files.sort().map((file) => {
    const text = fs.readFileSync(path.join(srcDir, file), 'utf8');
    const imports = [...text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g)]
      .map((m) => path.normalize(path.join(path.dirname(file), (m[1] ?? m[2])!)).replace(/\.js$/, '.ts'));
    return { file, ...unitOf(file), imports: [...new Set(imports)] };
  });
}

/** Imports that run up a layer or sideways into another unit of the same layer. */
export function layerViolations(modules: SourceModule[]): string[] {
  const byFile = new Map(modules.map((m) => [m.file, m]));
  const found: string[] = [];
  for (const m of modules) {
    for (const target of m.imports) {
      const t = byFile.get(target);
      if (!t) {
        found.push(`${m.file} imports ${target}, which is not a module under src/`);
        continue;
      }
      if (t.unit === m.unit) continue;
      if (t.layer > m.layer) {
        found.push(`${m.file} (${LAYERS[m.layer]!.name}) imports ${t.file} (${LAYERS[t.layer]!.name})`);
      }
    }
  }
  return found;
}

/** Pairs (and longer circles) of units that import each other, e.g. `holds/ <-> delivery/`. */
export function unitCycles(modules: SourceModule[]): string[][] {
  const byFile = new Map(modules.map((m) => [m.file, m]));
  const units = new Map<string, Set<string>>();
  for (const m of modules) {
    const edges = units.get(m.unit) ?? new Set<string>();
    units.set(m.unit, edges);
    for (const target of m.imports) {
      const t = byFile.get(target);
      if (t && t.unit !== m.unit) edges.add(t.unit);
    }
  }
  return importCycles([...units].map(([unit, edges]) => ({ file: unit, unit, layer: 0, imports: [...edges] })));
}

/** Import cycles between files (strongly connected components larger than one file). */
export function importCycles(modules: SourceModule[]): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const graph = new Map(modules.map((m) => [m.file, m.imports]));
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return cycles;
}

/** The layer table as docs/architecture.md shows it (highest layer first). */
export function layerPicture(): string {
  const width = Math.max(...LAYERS.map((l) => l.units.join('  ').length));
  return [...LAYERS]
    .reverse()
    .map((l) => `${l.name.padEnd(8)}│ ${l.units.join('  ').padEnd(width)} │ ${l.role}`)
    .join('\n');
}
