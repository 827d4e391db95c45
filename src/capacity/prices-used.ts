import type { Workload } from './input.js';
import type { PriceTable } from './prices.js';

// Which prices a capacity report used, each with its source page and date:
// what `leasehold capacity --detail` lists under "Prices used".

export interface PriceUsed {
  /** The table's key: a `prices:` entry, or `email.<provider>` for the provider's plan. */
  key: string;
  /** What it costs, as the table says it: `$0.032 per hour`, `$20/month, 50,000 included, $0.90 per 1,000 more`. */
  price: string;
  source: string;
  taken: string;
}

/** A price as written in the table: $0.0000004, not $4e-7. */
const money = (usd: number) => `$${usd.toLocaleString('en-US', { maximumFractionDigits: 12 })}`;

/** Every unit price of the table, and the workload's provider plan: what --detail lists with its source and date. */
export function pricesUsed(w: Workload, prices: PriceTable): PriceUsed[] {
  const used: PriceUsed[] = (Object.keys(prices.prices) as Array<keyof PriceTable['prices']>).map((key) => {
    const p = prices.prices[key];
    return { key, price: `${money(p.usd)} per ${p.unit}`, source: p.source, taken: p.taken };
  });
  const plan = prices.email[w.provider.name];
  used.push({
    key: `email.${w.provider.name}`,
    price: `${money(plan.monthlyUsd)}/month, ${plan.includedPerMonth.toLocaleString('en-US')} included, ${money(plan.usdPerThousandOver)} per 1,000 more`,
    source: plan.source,
    taken: plan.taken,
  });
  return used;
}

