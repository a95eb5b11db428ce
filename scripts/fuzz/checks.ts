/**
 * What every answer must be, whatever was asked: below 500 (except load shedding: 503 with
 * `Retry-After` and a catalogue code), an error as `application/problem+json` whose `code` is in
 * the catalogue and whose `status` is the response's, a success with a JSON body parseable as JSON.
 * And an answer at all: a closed or silent connection is a violation unless the case allows it.
 */
import type { Exchange, RawResponse } from './raw-client.js';

export interface Violation {
  readonly rule: string;
  readonly detail: string;
}

export interface ResponseRules {
  readonly problemCodes: ReadonlySet<string>;
}

export function checkResponse(response: RawResponse, rules: ResponseRules, method: string): Violation[] {
  const violations: Violation[] = [];
  const { status, headers } = response;
  const type = headers['content-type'] ?? '';
  if (status === 0) return [{ rule: 'http', detail: 'not an HTTP/1.x status line' }];
  if (status < 400) {
    if (type.startsWith('application/json') && method !== 'HEAD' && !response.streamed) {
      try {
        JSON.parse(response.body.toString('utf8'));
      } catch {
        violations.push({ rule: 'json', detail: `a ${status} application/json body that is not JSON: ${preview(response.body)}` });
      }
    }
    return violations;
  }
  if (!type.startsWith('application/problem+json')) {
    violations.push({ rule: 'problem+json', detail: `${status} with content-type ${JSON.stringify(type)}: ${preview(response.body)}` });
  }
  let code: unknown;
  if (method !== 'HEAD') {
    try {
      const problem = JSON.parse(response.body.toString('utf8')) as { code?: unknown; status?: unknown };
      code = problem.code;
      if (!rules.problemCodes.has(String(problem.code))) violations.push({ rule: 'catalogue', detail: `${status} with code ${JSON.stringify(problem.code)} (not in the catalogue)` });
      if (problem.status !== status) violations.push({ rule: 'problem-status', detail: `response ${status}, problem says ${JSON.stringify(problem.status)}` });
    } catch {
      violations.push({ rule: 'problem+json', detail: `${status} body is not JSON: ${preview(response.body)}` });
    }
  }
  if (status >= 500) {
    const shedding = status === 503 && headers['retry-after'] !== undefined && (method === 'HEAD' || rules.problemCodes.has(String(code)));
    if (!shedding) violations.push({ rule: '5xx', detail: `${status} ${JSON.stringify(code)}${status === 503 ? ' without Retry-After' : ''}: ${preview(response.body)}` });
  }
  return violations;
}

export function checkExchange(exchange: Exchange, rules: ResponseRules, method: string, allowClose: boolean): Violation[] {
  if (exchange.kind === 'timeout') return [{ rule: 'no-answer', detail: `no complete answer in time; got ${JSON.stringify(exchange.partial)}` }];
  if (exchange.kind === 'closed') {
    if (exchange.error === 'ECONNREFUSED') return [{ rule: 'crash', detail: 'connection refused: the server is not listening' }];
    return allowClose ? [] : [{ rule: 'no-answer', detail: `closed without a complete answer${exchange.error === undefined ? '' : ` (${exchange.error})`}; got ${JSON.stringify(exchange.partial)}` }];
  }
  return exchange.responses.flatMap((response) => checkResponse(response, rules, method));
}

function preview(body: Buffer): string {
  const text = body.subarray(0, 300).toString('utf8');
  return JSON.stringify(body.length > 300 ? `${text}…` : text);
}
