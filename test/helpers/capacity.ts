import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { parseWorkload, type ConfigDefaults, type Workload } from '../../src/capacity/input.js';
import { parsePrices, type PriceTable } from '../../src/capacity/prices.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export const pricesPath = path.join(root, 'capacity', 'prices.yaml');
export const examplePath = path.join(root, 'capacity', 'workload.example.yaml');

/** The checked-in price table, validated. */
export const prices = (): PriceTable => parsePrices(parse(readFileSync(pricesPath, 'utf8')));

/** The configuration defaults of an unconfigured deployment (src/config.ts). */
export const defaults: ConfigDefaults = {
  provider: 'sandbox',
  perSecond: 10,
  burst: 10,
  deliveryBatch: 50,
  deliveryConcurrency: 8,
  expiryBatch: 500,
  expiryIntervalMs: 1000,
  promiseSeconds: 900,
  expiryPromiseSeconds: 60,
};

/** A validated workload from a partial one. */
export const workload = (raw: Record<string, unknown>): Workload => parseWorkload(raw, defaults);
