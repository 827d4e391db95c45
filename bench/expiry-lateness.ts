import type { Benchmark } from './common.js';
export const expiryLateness: Benchmark = {
  name: 'expiry-lateness',
  description: 'placeholder',
  async run() {
    return { figures: [] };
  },
};
