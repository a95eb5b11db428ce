/**
 * Every write the server acknowledged during the run (a 2xx start, a 2xx signal batch) and every
 * purge it confirmed, then the read-back: each started process is still there with its deployment,
 * each tree answers and restores, and each acknowledged signal is in its process's mailbox with the
 * payload digest of the content acknowledged (two different contents acknowledged for one signal
 * id cannot both match).
 */
import { Payload } from '../../src/kernel/index.js';
import type { Violation } from './checks.js';
import { call } from './live-state.js';

interface Started {
  readonly rootId: string;
  readonly deployment: string;
}

export interface Verification {
  readonly processes: number;
  readonly roots: number;
  readonly restored: number;
  readonly signals: number;
  readonly violations: Violation[];
}

export class Ledger {
  readonly #started = new Map<string, Started>();
  /** processId → signal id → digests acknowledged. */
  readonly #signals = new Map<string, Map<string, Set<string>>>();
  /** processId → its root, for every process a signal was acknowledged on. */
  readonly #roots = new Map<string, string>();
  readonly #purged = new Set<string>();

  started(processId: string, rootId: string, deployment: string): void {
    this.#started.set(processId, { rootId, deployment });
    this.#roots.set(processId, rootId);
  }

  signalled(processId: string, rootId: string | undefined, signals: ReadonlyArray<{ readonly id: string; readonly payload: unknown }>): void {
    if (rootId !== undefined) this.#roots.set(processId, rootId);
    const byId = this.#signals.get(processId) ?? new Map<string, Set<string>>();
    this.#signals.set(processId, byId);
    for (const signal of signals) {
      // The payload as parsed from the body text the server got.
      const digest = Payload.encode(signal.payload ?? null).digest().toString();
      const digests = byId.get(signal.id) ?? new Set<string>();
      digests.add(digest);
      byId.set(signal.id, digests);
    }
  }

  purged(rootId: string): void {
    this.#purged.add(rootId);
  }

  get startCount(): number {
    return this.#started.size;
  }

  #gone(processId: string): boolean {
    const root = this.#roots.get(processId);
    return this.#purged.has(processId) || (root !== undefined && this.#purged.has(root));
  }

  /**
   * Reads everything back from `base`. `restore` is how trees are proven restorable: `in-place`
   * (the same embedded server: restore, and a released finished tree restored from its stored
   * head) or `takeover` (a fresh server over the same Redis restores every tree first).
   */
  async verify(base: URL, restore: 'in-place' | 'takeover'): Promise<Verification> {
    const violations: Violation[] = [];
    const roots = new Set([...this.#started.values()].map((started) => started.rootId).filter((root) => !this.#purged.has(root)));
    let restored = 0;
    for (const root of roots) {
      const path = `/v1/trees/${encodeURIComponent(root)}`;
      if (restore === 'takeover') {
        const taken = await call(base, 'POST', `${path}/restore`, {});
        if (taken.status !== 200) violations.push({ rule: 'restore', detail: `takeover restore of ${root}: ${taken.status} ${JSON.stringify(taken.body).slice(0, 300)}` });
        else restored += 1;
      }
      const tree = await call(base, 'GET', path);
      if (tree.status !== 200) {
        violations.push({ rule: 'tree', detail: `GET ${path}: ${tree.status} ${JSON.stringify(tree.body).slice(0, 300)}` });
        continue;
      }
      const snapshot = await call(base, 'GET', `${path}/snapshot`);
      if (snapshot.status !== 200) violations.push({ rule: 'snapshot', detail: `GET ${path}/snapshot: ${snapshot.status}` });
      if (restore === 'in-place') {
        // A finished tree can be released; then it must come back from its stored head.
        const released = await call(base, 'DELETE', path);
        if (released.status !== 204 && !(released.status === 409 && released.body?.code === 'tree_live')) {
          violations.push({ rule: 'release', detail: `DELETE ${path}: ${released.status} ${JSON.stringify(released.body).slice(0, 300)}` });
        }
        const again = await call(base, 'POST', `${path}/restore`, {});
        if (again.status !== 200) violations.push({ rule: 'restore', detail: `POST ${path}/restore: ${again.status} ${JSON.stringify(again.body).slice(0, 300)}` });
        else restored += 1;
      }
    }
    for (const [processId, started] of this.#started) {
      if (this.#gone(processId)) continue;
      const inspected = await call(base, 'GET', `/v1/processes/${encodeURIComponent(processId)}`);
      if (inspected.status !== 200) violations.push({ rule: 'acknowledged-start', detail: `GET ${processId}: ${inspected.status} ${JSON.stringify(inspected.body).slice(0, 300)}` });
      else if (inspected.body.deployment !== started.deployment) violations.push({ rule: 'acknowledged-start', detail: `${processId} runs ${inspected.body.deployment}, started as ${started.deployment}` });
    }
    let signals = 0;
    for (const [processId, byId] of this.#signals) {
      if (this.#gone(processId)) continue;
      const receipts = await this.#receipts(base, processId);
      if (receipts === undefined) {
        violations.push({ rule: 'acknowledged-signal', detail: `${processId}: its receipts cannot be read` });
        continue;
      }
      for (const [id, digests] of byId) {
        signals += 1;
        const receipt = receipts.get(id);
        if (receipt === undefined) violations.push({ rule: 'acknowledged-signal', detail: `${processId}: acknowledged signal ${JSON.stringify(id)} is not in the mailbox` });
        else if (digests.size !== 1 || !digests.has(receipt)) {
          violations.push({ rule: 'acknowledged-signal', detail: `${processId}: signal ${JSON.stringify(id)} acknowledged with ${digests.size} content(s) ${[...digests].join(', ')}; the mailbox holds ${receipt}` });
        }
      }
    }
    return { processes: this.#started.size, roots: roots.size, restored, signals, violations };
  }

  /** signal id → payload digest, over every page; undefined when the process cannot be read. */
  async #receipts(base: URL, processId: string): Promise<Map<string, string> | undefined> {
    const receipts = new Map<string, string>();
    let after: string | undefined;
    for (;;) {
      const page = await call(base, 'GET', `/v1/processes/${encodeURIComponent(processId)}/signals?limit=1000${after === undefined ? '' : `&after=${after}`}`);
      if (page.status !== 200) return undefined;
      for (const receipt of page.body.items as Array<{ id: string; payloadDigest: string }>) receipts.set(receipt.id, receipt.payloadDigest);
      if (page.body.nextCursor === null) return receipts;
      after = String(page.body.nextCursor);
    }
  }
}
