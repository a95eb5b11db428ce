import type { TreeStore } from '../kernel/tree-committer.js';

/** A failed conformance expectation; `message` names the broken rule. */
export class ConformanceFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConformanceFailure';
  }
}

/** One case of the committer conformance suite, run against a fresh, empty store. */
export interface CommitterConformanceCase {
  readonly name: string;
  run(store: TreeStore): Promise<void>;
}
