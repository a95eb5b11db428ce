/**
 * Hash routing: `#/<view>/<id>?<filters>`. The server serves one static page at `/` and needs no
 * fallback route for client paths (every other path keeps the API's problem+json 404), and the filters
 * live in the URL, so a view can be reloaded, bookmarked and shared as it is.
 */
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  readonly view: string;
  readonly id: string | undefined;
  readonly query: URLSearchParams;
}

export function parseRoute(hash: string): Route {
  const text = hash.replace(/^#\/?/, '');
  const [path = '', search = ''] = text.split('?', 2);
  const [view = 'processes', ...rest] = path.split('/');
  const id = rest.length === 0 ? undefined : decodeURIComponent(rest.join('/'));
  return { view: view === '' ? 'processes' : view, id, query: new URLSearchParams(search) };
}

export function href(view: string, id?: string, query?: Record<string, string | undefined>): string {
  const parameters = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined && value !== '') parameters.set(name, value);
  const search = parameters.toString();
  return `#/${view}${id === undefined ? '' : `/${encodeURIComponent(id)}`}${search === '' ? '' : `?${search}`}`;
}

export function navigate(to: string): void {
  if (location.hash !== to) location.hash = to;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const changed = (): void => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  return route;
}
