/**
 * The methods each route path takes, collected as routes are registered
 * (an onRoute hook), so a known path asked with another method answers 405
 * with `Allow` instead of 404 (RFC 9110 §15.5.6).
 */
export class RouteMethods {
  private readonly routes: Array<{ pattern: RegExp; methods: Set<string> }> = [];
  private readonly byUrl = new Map<string, Set<string>>();

  add(method: string | string[], url: string): void {
    let methods = this.byUrl.get(url);
    if (methods === undefined) {
      methods = new Set();
      this.byUrl.set(url, methods);
      this.routes.push({ pattern: patternOf(url), methods });
    }
    for (const m of Array.isArray(method) ? method : [method]) methods.add(m.toUpperCase());
  }

  /** The methods some route at `path` (a request's path, without the query) takes, sorted; empty when none. */
  allowed(path: string): string[] {
    const out = new Set<string>();
    for (const route of this.routes) {
      if (route.pattern.test(path)) for (const m of route.methods) out.add(m);
    }
    return [...out].sort();
  }
}

/** A find-my-way URL (`/v1/holds/:id`, `/assets/*`) as a regex over request paths. */
function patternOf(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) => {
      if (segment === '*') return '.*';
      if (segment.startsWith(':')) return '[^/]+';
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  return new RegExp(`^${source}$`);
}
