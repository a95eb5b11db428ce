/**
 * HTTP metrics, on the Host's Prometheus registry (`host.telemetry.registry`, rendered by
 * `GET /metrics`): a request counter and a latency histogram by method, route and status.
 *
 * The route label is the route's pattern (`/v1/processes/:id`), never the raw URL, so label
 * cardinality is bounded by the routes this app declares: a request no route matched is `unmatched`,
 * one Node's parser refused before it had a method or a path is `unparsed` (counted, not timed).
 */
import { METHODS } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Counter, Histogram, type Registry } from 'prom-client';

export const unmatchedRoute = 'unmatched';
export const unparsedRoute = 'unparsed';

type Labels = 'method' | 'route' | 'status';

const knownMethods = new Set(METHODS);

/** Latency buckets in seconds: sub-millisecond reads up to the 60 s result long poll. */
const buckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export class HttpMetrics {
  readonly requests: Counter<Labels>;
  readonly duration: Histogram<Labels>;

  /**
   * Registers the metrics on `registry`, or takes the ones already there (a second app built on
   * the same Host shares them rather than failing on a duplicate name).
   */
  constructor(registry: Registry) {
    this.requests =
      (registry.getSingleMetric('scope_http_requests_total') as Counter<Labels> | undefined) ??
      new Counter({
        name: 'scope_http_requests_total',
        help: `HTTP requests answered, by method, route pattern ("${unmatchedRoute}": no route matched; "${unparsedRoute}": refused by the HTTP parser) and status`,
        labelNames: ['method', 'route', 'status'],
        registers: [registry],
      });
    this.duration =
      (registry.getSingleMetric('scope_http_request_duration_seconds') as Histogram<Labels> | undefined) ??
      new Histogram({
        name: 'scope_http_request_duration_seconds',
        help: `Time from receiving an HTTP request to the end of its response, by method, route pattern ("${unmatchedRoute}": no route matched) and status`,
        labelNames: ['method', 'route', 'status'],
        buckets,
        registers: [registry],
      });
  }

  /** Records one answered request (an `onResponse` hook, or the router's own error answers). */
  observe(request: FastifyRequest, reply: FastifyReply, seconds: number): void {
    const labels = {
      method: knownMethods.has(request.method) ? request.method : 'other',
      route: request.is404 ? unmatchedRoute : (request.routeOptions.url ?? unmatchedRoute),
      status: String(reply.statusCode),
    };
    this.requests.inc(labels);
    if (Number.isFinite(seconds) && seconds >= 0) this.duration.observe(labels, seconds);
  }

  /** Records a request Node's HTTP parser refused (it has no trustworthy method or path). */
  unparsed(status: number): void {
    this.requests.inc({ method: 'unknown', route: unparsedRoute, status: String(status) });
  }
}
