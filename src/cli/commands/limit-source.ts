import { iso } from '../../format.js';
import type { RateLimitState } from '../../tables/rate-limiter.js';

/** Where a limit in force came from: the configuration applied at a start, or an operator's change (in force until the configuration changes). */
export function describeLimitSource(l: RateLimitState): string {
  const at = l.setAt ? ` at ${iso(l.setAt)}` : '';
  if (l.source === 'configuration') return `from the configuration${l.setBy ? ` (${l.setBy})` : ''}${at}`;
  const differs = l.configured && (l.configured.perSecond !== l.perSecond || l.configured.burst !== l.burst);
  return `set by operator ${l.setBy ?? '(unknown)'}${at}${differs ? `; configured: ${l.configured!.perSecond}/s, burst ${l.configured!.burst}` : ''}`;
}
