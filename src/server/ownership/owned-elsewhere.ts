import { KernelError } from '../../kernel/index.js';
import { HostErrorCode } from '../../errors.js';

/** Where a tree lives: the live node that owns it. */
export interface OwnerHint {
  readonly nodeId: string;
  readonly url: string;
}

/**
 * `tree_owned_elsewhere`: a live other node owns the tree. The HTTP edge forwards the command to
 * `owner.url` (src/app/forwarding.ts); a forwarded command that meets it answers it, naming the owner.
 */
export class OwnedElsewhereError extends KernelError {
  readonly owner: OwnerHint;

  constructor(root: string, owner: OwnerHint) {
    super(HostErrorCode.treeOwnedElsewhere, `tree ${root} is owned by node ${owner.nodeId} (${owner.url})`);
    this.name = 'OwnedElsewhereError';
    this.owner = owner;
  }
}
