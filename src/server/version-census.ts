import type { DeploymentRef, TreeSnapshot } from '../kernel/index.js';
import { rootOfMember, type RootIndex } from '../store/root-index.js';
import type { DeploymentCatalog } from './catalog.js';
import { codedError, HostErrorCode } from '../errors.js';
import { refView, type RefView } from './drift.js';
import type { DeploymentVersionsView } from './host.js';
import { storeCall } from './store-call.js';

/** Roots of one name the census reads at most (newest first): a bounded answer, marked incomplete past it. */
export const censusBound = 1_000;
/** Heads read at once. */
const batch = 100;
/** Root ids listed per version (the count is the whole). */
const sampleSize = 20;

interface Tally {
  ref: DeploymentRef;
  count: number;
  rootIds: string[];
}

/**
 * `GET /v1/deployments/{name}/versions`: every version of a name this node registered, plus any
 * version a live tree of that name runs that this node does not hold, each with its live trees (roots
 * not yet terminal). The trees are counted from the name's root index and their stored heads (the
 * authority, whichever node runs them), newest first and at most {@link censusBound} of them.
 */
export async function versionCensus(
  name: string,
  catalog: DeploymentCatalog,
  roots: RootIndex,
  loadHead: (root: string) => Promise<TreeSnapshot | undefined>,
): Promise<DeploymentVersionsView> {
  const tallies = new Map<string, Tally>();
  let scanned = 0;
  let before: string | undefined;
  let complete = false;
  while (scanned < censusBound) {
    const want = Math.min(batch, censusBound - scanned);
    const members = await storeCall('process list', () => roots.page(before, want, name));
    const heads = await Promise.all(members.map((member) => loadHead(rootOfMember(member))));
    for (const head of heads) {
      if (head === undefined || head.root.isTerminal) continue;
      const ref = head.root.deploymentRef;
      const key = ref.digest.toString();
      const tally = tallies.get(key) ?? { ref, count: 0, rootIds: [] };
      tally.count += 1;
      if (tally.rootIds.length < sampleSize) tally.rootIds.push(head.rootId.toString());
      tallies.set(key, tally);
    }
    scanned += members.length;
    before = members.at(-1);
    if (members.length < want) {
      complete = true;
      break;
    }
  }
  const registered = catalog.versions(name);
  if (registered.length === 0 && tallies.size === 0) throw codedError(HostErrorCode.deploymentNotFound, `no deployment named ${JSON.stringify(name)} and no live tree of that name`);
  const versions: DeploymentVersionsView['versions'][number][] = registered.map((version) => {
    const key = version.deployment.ref.digest.toString();
    const tally = tallies.get(key);
    tallies.delete(key);
    return entry(refView(version.deployment.ref), version.current, true, version.restoreDecider !== undefined, tally);
  });
  for (const tally of tallies.values()) versions.push(entry(refView(tally.ref), false, false, false, tally));
  return { name, versions, treesScanned: scanned, complete };
}

function entry(ref: RefView, current: boolean, registeredHere: boolean, restoreDecider: boolean, tally: Tally | undefined): DeploymentVersionsView['versions'][number] {
  return { ...ref, current, registeredHere, restoreDecider, liveTrees: tally?.count ?? 0, liveRootIds: tally?.rootIds ?? [] };
}
