/**
 * The ids the fuzzer has seen the server hand out (processes, roots, open waits, effects, log
 * positions). Generated requests name them by reference (`{ref, pick}`), resolved against this
 * state only when the request is sent, so a generated case stays plain data that shrinks and
 * prints, while still reaching existing resources deep enough to matter.
 */

export type RefKind = 'process' | 'root' | 'waiting' | 'effect' | 'position';

/** A reference to a live id: the `pick`-th (modulo) of its kind. */
export interface Ref {
  readonly ref: RefKind;
  readonly pick: number;
}

export function isRef(value: unknown): value is Ref {
  return typeof value === 'object' && value !== null && typeof (value as Ref).ref === 'string' && typeof (value as Ref).pick === 'number';
}

export interface KnownProcess {
  readonly processId: string;
  readonly rootId: string;
  readonly deployment: string;
}

/** A JSON API call for bookkeeping (not fuzzing): status and parsed body. */
export async function call(base: URL, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(new URL(path, base), {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: kept as text
  }
  return { status: response.status, body: parsed };
}

export class LiveState {
  readonly processes: KnownProcess[] = [];
  /** processId → its open wait. */
  readonly waits = new Map<string, string>();
  readonly effects: Array<{ readonly processId: string; readonly effectId: string }> = [];
  readonly positions: string[] = [];
  readonly #known = new Set<string>();

  add(process: KnownProcess): void {
    if (this.#known.has(process.processId)) return;
    this.#known.add(process.processId);
    this.processes.push(process);
  }

  /** Resolves a reference (undefined when nothing of that kind is known yet). */
  resolve(ref: Ref): string | undefined {
    const pickFrom = <T>(items: readonly T[]): T | undefined => (items.length === 0 ? undefined : items[ref.pick % items.length]);
    switch (ref.ref) {
      case 'process':
        return pickFrom(this.processes)?.processId;
      case 'root':
        return pickFrom(this.processes.filter((process) => process.processId === process.rootId))?.rootId;
      case 'waiting':
        return pickFrom([...this.waits.keys()]) ?? pickFrom(this.processes)?.processId;
      case 'effect':
        return pickFrom(this.effects)?.effectId;
      case 'position':
        return pickFrom(this.positions);
    }
  }

  /** The effect of a process, when `effect` should belong to the addressed process. */
  effectOf(processId: string, pick: number): string | undefined {
    const own = this.effects.filter((effect) => effect.processId === processId);
    return own.length === 0 ? undefined : own[pick % own.length]!.effectId;
  }

  /** Re-reads the open waits, some effects and some log positions. */
  async refresh(base: URL): Promise<void> {
    const waits = await call(base, 'GET', '/v1/waits');
    if (waits.status === 200) {
      this.waits.clear();
      for (const wait of waits.body.items as Array<{ processId: string; rootId: string; waitId: string; deployment: string }>) {
        this.waits.set(wait.processId, wait.waitId);
        this.add({ processId: wait.processId, rootId: wait.rootId, deployment: wait.deployment });
      }
    }
    for (const process of this.processes.slice(-8)) {
      const effects = await call(base, 'GET', `/v1/processes/${encodeURIComponent(process.processId)}/effects`);
      if (effects.status === 200) {
        for (const effect of effects.body.items as Array<{ effectId: string }>) {
          if (!this.effects.some((known) => known.effectId === effect.effectId)) this.effects.push({ processId: process.processId, effectId: effect.effectId });
        }
      }
      const events = await call(base, 'GET', `/v1/processes/${encodeURIComponent(process.processId)}/events?limit=5`);
      if (events.status === 200) for (const entry of events.body.items as Array<{ position: string }>) this.positions.push(entry.position);
    }
    // Bounded: the newest matter most.
    this.effects.splice(0, Math.max(0, this.effects.length - 200));
    this.positions.splice(0, Math.max(0, this.positions.length - 200));
  }
}
