import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Budget } from '../../src/kernel/budget.js';
import { CapabilitySet } from '../../src/kernel/capability.js';
import { canonicalize } from '../../src/kernel/canonical-json.js';
import { Digest } from '../../src/kernel/digest.js';
import { ExecutionState } from '../../src/kernel/execution-state.js';
import { ChildWaitCondition, ChildWaitSpec, Effect } from '../../src/kernel/effect.js';
import { KernelError } from '../../src/kernel/errors.js';
import { Failure } from '../../src/kernel/failure.js';
import { ChildKey, EffectId, ProcessId, TreeIncarnationId, WaitId, WaitKey } from '../../src/kernel/identity.js';
import { childWaitSatisfiedPayload, Mailbox, MailboxRecord } from '../../src/kernel/mailbox.js';
import { Payload } from '../../src/kernel/payload.js';
import { PreparedStep } from '../../src/kernel/prepared-step.js';
import { ProcessSnapshot, type ProcessSnapshotCreateOptions } from '../../src/kernel/process-snapshot.js';
import { Quota } from '../../src/kernel/quota.js';
import { SignalRequest } from '../../src/kernel/signal.js';
import { ProcessRelation } from '../../src/kernel/relation.js';
import { Termination } from '../../src/kernel/termination.js';
import { TreeLimits } from '../../src/kernel/tree-limits.js';
import { TreeSnapshot } from '../../src/kernel/tree-snapshot.js';
import { Transition } from '../../src/kernel/transition.js';
import {
  childProcessFields,
  fixtureChildSpec,
  fixtureIncarnationId,
  fixtureProcessId,
  fixtureState,
  interruptedRootTree,
  parkedRootTree,
  rootProcessFields,
  rootWithPreparedEffect,
  runningRootTree,
  terminalRootTree,
  treeOf,
  treeWithChildren,
} from '../../src/testing/snapshot-fixtures.js';

const code = 'invalid_tree_snapshot';
const rejects = (run: () => unknown, expected: string, fragment: string): void => {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof KernelError, `expected a KernelError, got ${String(error)}`);
    assert.equal(error.code, expected, error.message);
    assert.ok(error.message.includes(fragment), `"${error.message}" should mention "${fragment}"`);
    return true;
  });
};

/** Edits the parsed JSON of a tree and parses it back (ids and numbers here are small, so JSON.parse is exact). */
const parseEdited = (tree: TreeSnapshot, edit: (value: Record<string, any>) => void): TreeSnapshot => {
  const value = JSON.parse(tree.json()) as Record<string, any>;
  edit(value);
  return TreeSnapshot.parse(JSON.stringify(value));
};

function shuffled<T>(items: readonly T[], seed: number): T[] {
  const copy = [...items];
  let state = seed;
  for (let index = copy.length - 1; index > 0; index -= 1) {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    const other = state % (index + 1);
    [copy[index], copy[other]] = [copy[other] as T, copy[index] as T];
  }
  return copy;
}

function reorderMembers(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((item, index) => reorderMembers(item, seed + index));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(shuffled(Object.entries(value), seed).map(([key, item]) => [key, reorderMembers(item, seed + 1)]));
  }
  return value;
}

/* ------------------------------------------------------------------------------------------------
 * A family tree exercising every child rule: a root with finite budgets, two children started by
 * Step 1 (one completed, one running), a child-wait opening over both with a pending answer from
 * the completed one, and a prepared Step whose start_child effect created a third child.
 * ---------------------------------------------------------------------------------------------- */

const rootId = fixtureProcessId('family');
const rootRelation = ProcessRelation.root(rootId);
const childBudget = Budget.of({ steps: Quota.of(10), effects: Quota.of(5), signals: Quota.of(5) });
const rootBudget = Budget.of({ steps: Quota.of(100), effects: Quota.of(100), signals: Quota.of(100) });
const waitId = WaitId.derive(EffectId.derive(rootId, 2n, 0));
const startEffect = EffectId.derive(rootId, 3n, 0);

interface FamilyEdits {
  root?: (fields: ProcessSnapshotCreateOptions) => ProcessSnapshotCreateOptions;
  children?: (fields: ProcessSnapshotCreateOptions[]) => ProcessSnapshotCreateOptions[];
  limits?: TreeLimits;
}

function familyParts(edits: FamilyEdits = {}): ProcessSnapshot[] {
  const limits = edits.limits;
  const baseChildren = [
    childProcessFields(rootRelation, { slot: 0, budget: childBudget, status: 'completed', capabilities: CapabilitySet.of(['net.http']) }),
    childProcessFields(rootRelation, { slot: 1, budget: childBudget, status: 'running' }),
    childProcessFields(rootRelation, { slot: 2, startEffect, budget: childBudget, status: 'running' }),
  ];
  const children = (edits.children ?? ((fields) => fields))(baseChildren).map((fields) => ProcessSnapshot.create(fields));
  const [first, second, third] = children as [ProcessSnapshot, ProcessSnapshot, ProcessSnapshot];
  const spec = ChildWaitSpec.create({
    key: WaitKey.parse('workers'),
    children: [first.processId, second.processId],
    boundary: 'terminal_result',
    condition: ChildWaitCondition.any(),
  });
  const answer = first.result() === undefined ? Payload.encode({}) : childWaitSatisfiedPayload(spec, [{ result: first.result()! }]);
  const mailbox: Mailbox = rootProcessFields({ rootId })
    .mailbox!.append(MailboxRecord.waitOpening(waitId, { kind: 'children', spec }))
    .consume(1)
    .append(MailboxRecord.childWaitAnswer(waitId, [first.processId], answer));
  const startChild = Effect.startChild(fixtureChildSpec({ slot: 2, budget: childBudget }));
  const prepared = PreparedStep.create({
    processId: rootId,
    stepSequence: 3n,
    candidateState: fixtureState(3),
    intent: Transition.continue(0, [startChild]),
    effects: [{ effect: startChild, phase: 'settled' }],
  });
  const rootFields: ProcessSnapshotCreateOptions = {
    ...rootProcessFields({ rootId, committedSteps: 2n, budget: rootBudget, capabilities: CapabilitySet.of(['net.http', 'store.write']) }),
    allocatedResources: { steps: 30n, effects: 15n, signals: 15n },
    counters: { preparedEffects: 3n, droppedDeltas: 0n },
    mailbox,
    prepared,
    treeLimits: limits,
  };
  const root = ProcessSnapshot.create((edits.root ?? ((fields) => fields))(rootFields));
  void third;
  return [root, ...children];
}

function family(edits: FamilyEdits = {}): TreeSnapshot {
  return treeOf(familyParts(edits), { incarnationId: fixtureIncarnationId('family'), treeLimits: edits.limits });
}

const pinnedRunningRoot =
  '{"incarnation_id":"incarnation:67365deb4d2b2c5046467ebf9452fc1b","process_snapshots":[{"allocated_resources":{"effects":0,"signals":0,"steps":0},"budget":{"effects":{"maximum":null},"signals":{"maximum":null},"steps":{"maximum":null}},"capabilities":[],"committed_execution_state":{"kind":"scope.test.fixture-state","payload":{"step":0}},"committed_steps":0,"counters":{"dropped_deltas":0,"prepared_effects":0},"deployment_ref":{"bindings_digest":"sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945","configuration_digest":"sha256:60b285f997d55d6b9fc4b1470d7fb878b9ed22390f7254584bdd6671d312a982","contract_digest":"sha256:5b632dfe1b02fe7ef816e02af6d3a40ad00312fa882361ca3c7920e06f1138fc","digest":"sha256:83a658b65b0c84a792f4e22100664b748d24de0d6b809b51fc7491e9008f46db","implementation_digest":"sha256:680e9951ed7ac50b19ec1bbef579dd36f8f1c0b79f553fba6f6f97a5b24787b1","name":"scope.test.fixture"},"mailbox":{"records":[],"signal_cursor":0},"pending_control":{},"process_id":"process:7ffc02ed4a21ef0b546edcf033ce2f27","relation":{},"started_at":"2025-01-01T00:00:00Z","status":"running"}],"tree_limits":{"max_active_children":16,"max_children":{"maximum":null},"max_depth":16,"max_pending_signals":10000,"max_process_snapshot_bytes":{"maximum":null},"max_snapshot_bytes":{"maximum":null},"max_tree_processes":{"maximum":null}}}';

describe('TreeSnapshot round trips and canonical form', () => {
  const fixtures: Record<string, () => TreeSnapshot> = {
    running: () => runningRootTree({ pendingSignals: 3, consumedSignals: 2 }),
    waiting: () => parkedRootTree(),
    paused: () => parkedRootTree({ parked: 'paused' }),
    completed: () => terminalRootTree(),
    planned: () => rootWithPreparedEffect('planned'),
    pending: () => rootWithPreparedEffect('pending'),
    settled: () => rootWithPreparedEffect('settled', 'failed'),
    unknown: () => rootWithPreparedEffect('settled', 'unknown'),
    interrupted: () => interruptedRootTree(),
    children: () => treeWithChildren({ processes: 13, fanout: 3, childSignals: 2 }),
    family: () => family(),
  };
  for (const [name, build] of Object.entries(fixtures)) {
    test(`${name}: parse(json()) and parse(bytes()) reproduce the tree`, () => {
      const tree = build();
      const back = TreeSnapshot.parse(tree.json());
      assert.equal(back.json(), tree.json());
      assert.ok(back.equals(tree));
      assert.equal(back.digest.toString(), tree.digest.toString());
      assert.equal(TreeSnapshot.parse(tree.bytes()).digest.toString(), tree.digest.toString());
      assert.equal(tree.encodedSize, Buffer.byteLength(tree.json()));
      assert.deepEqual([...tree.bytes()], [...Buffer.from(tree.json())]);
      assert.equal(tree.digest.toString(), Digest.of(tree.json()).toString());
    });
  }

  test('canonical bytes splice each process record into the header', () => {
    const tree = family();
    const expected =
      `{"incarnation_id":"${tree.incarnationId}","process_snapshots":[` +
      tree.processSnapshots().map((process) => process.json()).join(',') +
      `],"tree_limits":${tree.treeLimits.json()}}`;
    assert.equal(tree.json(), expected);
  });

  test('process order and member order in the input do not change bytes or digest', () => {
    const tree = treeWithChildren({ processes: 40, fanout: 4, childSignals: 1 });
    const value = JSON.parse(tree.json()) as { process_snapshots: unknown[] };
    for (const seed of [1, 7, 42]) {
      const edited = reorderMembers({ ...value, process_snapshots: shuffled(value.process_snapshots, seed) }, seed);
      const text = JSON.stringify(edited, null, seed % 2 === 0 ? 2 : undefined);
      assert.notEqual(text, tree.json());
      const back = TreeSnapshot.parse(text);
      assert.equal(back.json(), tree.json());
      assert.equal(back.digest.toString(), tree.digest.toString());
    }
    const created = TreeSnapshot.create({
      incarnationId: tree.incarnationId,
      treeLimits: tree.treeLimits,
      processes: shuffled(tree.processSnapshots(), 3),
    });
    assert.equal(created.json(), tree.json());
  });

  test('processes are ordered by depth, then ProcessId', () => {
    const tree = treeWithChildren({ processes: 30, fanout: 3 });
    const processes = tree.processSnapshots();
    assert.ok(processes[0]?.relation.isRoot);
    for (let index = 1; index < processes.length; index += 1) {
      const previous = processes[index - 1] as ProcessSnapshot;
      const current = processes[index] as ProcessSnapshot;
      assert.ok(
        previous.relation.depth < current.relation.depth ||
          (previous.relation.depth === current.relation.depth && previous.processId.compare(current.processId) < 0),
      );
    }
  });

  test('pinned vectors: canonical bytes and digests of fixed trees', () => {
    const running = runningRootTree();
    assert.equal(running.json(), pinnedRunningRoot);
    assert.equal(running.digest.toString(), 'sha256:976bfec00db076492fed78dc37721836474fa9a69ce1692108af33bf39780d54');
    assert.equal(
      rootWithPreparedEffect('settled', 'unknown', { pendingSignals: 1, consumedSignals: 1 }).digest.toString(),
      'sha256:9b59eda0731bae74d222b3bed121bdf5a8a65e1615eb3c206d37b255bbaa61aa',
    );
    assert.equal(treeWithChildren({ processes: 4, fanout: 3 }).digest.toString(), 'sha256:19552fffc429d27ee7d8f1465e82c15c7542eacfe48f635083112917b16e6428');
  });

  test('a 1000-process tree parses and digests', () => {
    const tree = treeWithChildren({ processes: 1000, fanout: 10, childSignals: 2 });
    assert.equal(tree.size, 1000);
    const back = TreeSnapshot.parse(tree.json());
    assert.equal(back.size, 1000);
    assert.equal(back.digest.toString(), tree.digest.toString());
    assert.equal(back.processSnapshots()[999]?.relation.depth, 3);
  });
});

describe('TreeSnapshot accessors', () => {
  test('root, process lookup and children', () => {
    const tree = family();
    assert.equal(tree.rootId.toString(), rootId.toString());
    assert.equal(tree.root.processId.toString(), rootId.toString());
    assert.equal(tree.size, 4);
    const children = tree.children(rootId);
    assert.equal(children.length, 3);
    assert.ok(children.every((child) => child.relation.parentId?.equals(rootId)));
    assert.equal(tree.process(children[0]!.processId)?.processId.toString(), children[0]!.processId.toString());
    assert.equal(tree.process(ProcessId.parse('process:absent')), undefined);
    assert.deepEqual(tree.children(children[0]!.processId), []);
    assert.equal(tree.incarnationId.toString(), fixtureIncarnationId('family').toString());
    assert.ok(tree.treeLimits.equals(TreeLimits.defaults));
    assert.match(String(tree), /^TreeSnapshot\(process:/);
  });

  test('withIncarnation keeps the processes under a new writer', () => {
    const tree = family();
    const next = tree.withIncarnation(fixtureIncarnationId('writer-2'));
    assert.equal(next.incarnationId.toString(), fixtureIncarnationId('writer-2').toString());
    assert.notEqual(next.digest.toString(), tree.digest.toString());
    assert.equal(next.json().replace(next.incarnationId.toString(), tree.incarnationId.toString()), tree.json());
    assert.ok(TreeSnapshot.parse(next.json()).equals(next));
    assert.equal(tree.withIncarnation(tree.incarnationId).digest.toString(), tree.digest.toString());
  });

  test('effectRequest rebuilds a retained request without an attempt id', () => {
    const tree = rootWithPreparedEffect('pending');
    const id = EffectId.derive(tree.rootId, 1n, 0);
    const request = tree.effectRequest(tree.rootId, id);
    assert.ok(request);
    assert.equal(request.id.toString(), id.toString());
    assert.equal(request.stepSequence, 1n);
    assert.equal(request.batchIndex, 0);
    assert.equal(request.attemptId, undefined);
    assert.equal(request.incarnationId?.toString(), tree.incarnationId.toString());
    assert.ok(request.deploymentRef.equals(tree.root.deploymentRef));
    assert.ok(request.relation.equals(tree.root.relation));
    assert.equal(tree.effectRequest(tree.rootId, EffectId.derive(tree.rootId, 2n, 0)), undefined);
    assert.equal(tree.effectRequest(ProcessId.parse('process:absent'), id), undefined);
    assert.equal(runningRootTree().effectRequest(tree.rootId, id), undefined);
  });

  test('effectRequest of a started child renders the full start_child request', () => {
    const tree = TreeSnapshot.parse(family().json());
    const request = tree.effectRequest(rootId, startEffect);
    assert.ok(request?.effect.equals(Effect.startChild(fixtureChildSpec({ slot: 2, budget: childBudget }))));
  });

  test('equals compares canonical bytes', () => {
    assert.ok(runningRootTree().equals(runningRootTree()));
    assert.equal(runningRootTree().equals(runningRootTree({ pendingSignals: 1 })), false);
  });
});

describe('TreeSnapshot strict decode', () => {
  const tree = family();
  const cases: Array<[string, (value: Record<string, any>) => void, string]> = [
    ['an unknown top-level member', (v) => (v.root_id = v.process_snapshots[0].process_id), '/ has an unknown member "root_id"'],
    ['a missing incarnation_id', (v) => delete v.incarnation_id, '/incarnation_id is required'],
    ['a missing tree_limits', (v) => delete v.tree_limits, '/tree_limits is required'],
    ['a missing process_snapshots', (v) => delete v.process_snapshots, '/process_snapshots is required'],
    ['a malformed incarnation id', (v) => (v.incarnation_id = 'incarnation:ABC'), '/incarnation_id is not a tree incarnation id'],
    ['an unknown tree_limits member', (v) => (v.tree_limits.extra = 1), '/tree_limits has an unknown member'],
    ['invalid tree limits', (v) => (v.tree_limits.max_active_children = 0), 'max_active_children must be a uint32 greater than zero'],
    ['a non-object process record', (v) => (v.process_snapshots[1] = 'x'), '/process_snapshots/1 must be an object'],
    ['a record without process_id', (v) => delete v.process_snapshots[1].process_id, '/process_snapshots/1/process_id is required'],
    ['a record without relation', (v) => delete v.process_snapshots[1].relation, '/process_snapshots/1/relation is required'],
    ['an unknown process member', (v) => (v.process_snapshots[2].extra = 1), '/process_snapshots/2 has an unknown member "extra"'],
    ['an unknown relation member', (v) => (v.process_snapshots[2].relation.root_id = 'x'), '/process_snapshots/2/relation has an unknown member'],
    ['an unknown nested member', (v) => (v.process_snapshots[0].mailbox.records[0].extra = 1), '/process_snapshots/0/mailbox/records/0 has an unknown member'],
    ['a missing process member', (v) => delete v.process_snapshots[3].pending_control, '/process_snapshots/3/pending_control is required'],
    ['a nested value error', (v) => (v.process_snapshots[3].budget.steps.maximum = -1), '/process_snapshots/3/budget/steps/maximum'],
    ['a process rule', (v) => (v.process_snapshots[0].status = 'completed'), 'a completed process needs its termination'],
    ['an empty tree', (v) => (v.process_snapshots = []), 'needs exactly one root'],
  ];
  for (const [name, edit, fragment] of cases) {
    test(`rejects ${name}`, () => {
      rejects(() => parseEdited(tree, edit), code, fragment);
    });
  }

  test('rejects malformed JSON with the tree code', () => {
    rejects(() => TreeSnapshot.parse('{"incarnation_id":'), code, 'tree snapshot');
    rejects(() => TreeSnapshot.parse('[]'), code, 'must be an object');
  });
});

describe('TreeSnapshot structure rules', () => {
  const tree = family();
  const indexOf = (value: Record<string, any>, id: ProcessId): number =>
    (value.process_snapshots as Array<{ process_id: string }>).findIndex((process) => process.process_id === id.toString());
  const children = tree.children(rootId);
  const completedChild = children.find((child) => child.isTerminal) as ProcessSnapshot;
  const runningChild = children.find(
    (child) => !child.isTerminal && !child.processId.equals(ProcessId.child(startEffect)),
  ) as ProcessSnapshot;

  test('duplicate process ids are rejected', () => {
    rejects(() => parseEdited(tree, (v) => v.process_snapshots.push(v.process_snapshots[1])), code, 'repeats process id');
    rejects(
      () => TreeSnapshot.create({ incarnationId: tree.incarnationId, treeLimits: tree.treeLimits, processes: [tree.root, tree.root] }),
      code,
      'appears twice',
    );
  });

  test('exactly one root', () => {
    rejects(() => parseEdited(tree, (v) => (v.process_snapshots = v.process_snapshots.slice(1))), code, 'needs exactly one root');
    const other = runningRootTree({ rootId: fixtureProcessId('other') }).root;
    rejects(() => treeOf([tree.root, other]), code, 'found 2');
  });

  test('every parent link names a process in the tree', () => {
    rejects(
      () => parseEdited(tree, (v) => (v.process_snapshots[indexOf(v, runningChild.processId)].relation.parent_id = 'process:nobody')),
      code,
      'names process:nobody, which is not in the tree',
    );
    rejects(() => treeOf([runningChild]), code, 'needs exactly one root');
    rejects(() => treeOf([runningRootTree({ rootId: fixtureProcessId('x') }).root, runningChild]), code, 'belongs to root');
  });

  test('parent links cannot form a cycle detached from the root', () => {
    rejects(
      () =>
        parseEdited(tree, (v) => {
          const a = v.process_snapshots[indexOf(v, completedChild.processId)];
          const b = v.process_snapshots[indexOf(v, runningChild.processId)];
          a.relation.parent_id = b.process_id;
          b.relation.parent_id = a.process_id;
        }),
      code,
      'does not descend from the root',
    );
  });

  test('created trees check depth against the parent', () => {
    const grandchild = ProcessSnapshot.create(childProcessFields(completedChild.relation, { slot: 0 }));
    const misplaced = ProcessSnapshot.create({
      ...grandchild.toFields(),
      relation: ProcessRelation.child(
        grandchild.processId,
        ProcessRelation.child(completedChild.processId, ProcessRelation.child(ProcessId.parse('process:zz'), rootRelation, ChildKey.parse('z')), ChildKey.parse('child-0')),
        ChildKey.parse('child-0'),
      ),
    });
    rejects(() => treeOf([...familyParts(), misplaced]), code, 'has depth 3, but its parent is at depth 1');
  });

  test('max_tree_processes bounds the records', () => {
    const limits = TreeLimits.of({ maxTreeProcesses: Quota.of(3) });
    rejects(() => TreeSnapshot.parse(tree.json().replace('"max_tree_processes":{"maximum":null}', '"max_tree_processes":{"maximum":3}')), code, '4 processes exceed max_tree_processes 3');
    rejects(() => family({ limits }), code, '4 processes exceed max_tree_processes 3');
  });

  test('max_depth bounds every record', () => {
    const deep = treeWithChildren({ processes: 5, fanout: 1 });
    const limited = deep.json().replace('"max_depth":16', '"max_depth":3');
    rejects(() => TreeSnapshot.parse(limited), code, 'depth 4 exceeds max_depth 3');
  });

  test('children hold no capability their parent lacks', () => {
    rejects(
      () =>
        family({
          root: (fields) => ({ ...fields, capabilities: CapabilitySet.of(['store.write']) }),
        }),
      code,
      'holds capabilities its parent',
    );
  });

  test('child keys are unique per parent', () => {
    rejects(
      () =>
        family({
          children: (fields) =>
            fields.map((child, index) =>
              index === 1
                ? { ...child, relation: ProcessRelation.child(child.relation.processId, rootRelation, ChildKey.parse('child-0')) }
                : child,
            ),
        }),
      code,
      'two children with child key child-0',
    );
  });

  test('max_children bounds lifetime children per process', () => {
    rejects(() => family({ limits: TreeLimits.of({ maxChildren: Quota.of(2) }) }), code, 'has 3 children, more than max_children 2');
    assert.ok(family({ limits: TreeLimits.of({ maxChildren: Quota.of(3) }) }));
  });

  test('max_active_children bounds non-terminal children per process', () => {
    rejects(() => family({ limits: TreeLimits.of({ maxActiveChildren: 1 }) }), code, 'has 2 non-terminal children, more than max_active_children 1');
    assert.ok(family({ limits: TreeLimits.of({ maxActiveChildren: 2 }) }));
  });

  test('a finite parent allocates exactly the sum of its children grants', () => {
    rejects(
      () => family({ root: (fields) => ({ ...fields, allocatedResources: { steps: 30n, effects: 14n, signals: 15n } }) }),
      code,
      "allocated_resources.effects is 14, but its children's effects grants sum to 15",
    );
    rejects(
      () =>
        parseEdited(tree, (v) => {
          v.process_snapshots[0].allocated_resources.signals = 16;
        }),
      code,
      'allocated_resources.signals is 16',
    );
    // A leaf with a finite budget allocates nothing.
    rejects(
      () =>
        family({
          children: (fields) =>
            fields.map((child, index) =>
              index === 1
                ? {
                    ...child,
                    budget: Budget.of({ steps: Quota.of(10), effects: Quota.of(5), signals: Quota.of(5) }),
                    allocatedResources: { steps: 1n, effects: 0n, signals: 0n },
                  }
                : child,
            ),
        }),
      code,
      'allocated_resources.steps is 1',
    );
  });

  test('a finite parent cannot grant an unlimited dimension', () => {
    rejects(
      () =>
        family({
          children: (fields) => fields.map((child, index) => (index === 1 ? { ...child, budget: Budget.unlimited() } : child)),
        }),
      code,
      'has an unlimited steps budget from finite parent',
    );
  });

  test('an unlimited parent grants without a debit', () => {
    const unlimited = treeWithChildren({ processes: 3, fanout: 2 });
    assert.equal(unlimited.root.allocatedResources.steps, 0n);
  });

  test('child grants stay within the parent authority (usage + allocations)', () => {
    rejects(
      () =>
        family({
          root: (fields) => ({ ...fields, budget: Budget.of({ steps: Quota.of(32), effects: Quota.of(100), signals: Quota.of(100) }) }),
        }),
      'invalid_snapshot',
      'budget.steps 32 cannot contain usage 2 + allocated 30 + prepared reservation 1',
    );
  });

  test('child-wait openings observe direct children of their opener', () => {
    rejects(
      () =>
        parseEdited(tree, (v) => {
          v.process_snapshots[0].mailbox.records[0].opens.spec.children[1] = 'process:stranger';
          v.process_snapshots[0].mailbox.records[1].answered = [v.process_snapshots[0].mailbox.records[0].opens.spec.children[0]];
        }),
      code,
      'awaits process:stranger, which is not its direct child',
    );
  });

  test('pending child-wait answers render from the captured terminal results', () => {
    // The answered child must be terminal.
    rejects(
      () =>
        parseEdited(tree, (v) => {
          v.process_snapshots[0].mailbox.records[1].answered = [runningChild.processId.toString()];
        }),
      code,
      'is not terminal',
    );
    // A created tree whose pending answer disagrees with the child's result is rejected.
    rejects(() => forgedAnswerTree(), code, 'disagrees with the captured terminal results');
  });

  test('drained child waits need the whole subtree terminal', () => {
    const drained = drainedTree('running');
    rejects(() => drained(), code, 'has a live descendant');
    const ok = drainedTree('completed')();
    assert.equal(TreeSnapshot.parse(ok.json()).digest.toString(), ok.digest.toString());
  });

  test('a retained successful child start identifies a captured child matching the request', () => {
    const started = ProcessId.child(startEffect);
    rejects(
      () => parseEdited(tree, (v) => v.process_snapshots.splice(indexOf(v, started), 1)),
      code,
      `child ${started.toString()} is not a captured direct child`,
    );
    rejects(
      () => parseEdited(tree, (v) => (v.process_snapshots[0].prepared.effects[0].started_child.input = { other: true })),
      code,
      'child_request_digest mismatch',
    );
    rejects(
      () =>
        family({
          children: (fields) =>
            fields.filter((_child, index) => index !== 2),
          root: (fields) => ({ ...fields, allocatedResources: { steps: 20n, effects: 10n, signals: 10n } }),
        }),
      code,
      'started a child that does not match',
    );
    rejects(
      () =>
        family({
          children: (fields) =>
            fields.map((child, index) => (index === 2 ? { ...child, childRequestDigest: Digest.of('another request') } : child)),
        }),
      code,
      'child_request_digest mismatch',
    );
  });

  test('a retained failed child start has no captured child', () => {
    const failure = Failure.create('contract', 'engine.child.input.invalid', 'child input is invalid');
    rejects(
      () =>
        family({
          root: (fields) => ({
            ...fields,
            prepared: PreparedStep.create({
              ...(fields.prepared as PreparedStep),
              intent: (fields.prepared as PreparedStep).intent,
              effects: [{ effect: (fields.prepared as PreparedStep).effects()[0]!.effect, failure }],
            }),
          }),
        }),
      code,
      'yet the tree captures it',
    );
  });

  test('tree limits are re-checked on processes created without them', () => {
    const running = runningRootTree({ pendingSignals: 3 }).root;
    rejects(
      () => treeOf([running], { treeLimits: TreeLimits.of({ maxPendingSignals: 2n }) }),
      code,
      '3 pending signals exceed max_pending_signals 2',
    );
  });

  test('max_snapshot_bytes bounds the canonical and the supplied length', () => {
    const running = runningRootTree();
    const size = running.encodedSize;
    const header = (limit: number) => running.json().replace('"max_snapshot_bytes":{"maximum":null}', `"max_snapshot_bytes":{"maximum":${limit}}`);
    const exact = header(size + String(size).length - 4);
    const limited = TreeSnapshot.parse(exact);
    assert.equal(limited.encodedSize, Buffer.byteLength(exact));
    rejects(() => TreeSnapshot.parse(header(size - 10)), code, 'exceeds max_snapshot_bytes');
    const padded = JSON.stringify(JSON.parse(exact), null, 1);
    rejects(() => TreeSnapshot.parse(padded), code, `input of ${Buffer.byteLength(padded)} bytes exceeds max_snapshot_bytes`);
    rejects(
      () => treeOf([running.root], { treeLimits: TreeLimits.of({ maxSnapshotBytes: Quota.of(100) }) }),
      code,
      'encoded size',
    );
  });

  test('create validates its members', () => {
    rejects(() => TreeSnapshot.create({ incarnationId: 'x' as unknown as TreeIncarnationId, treeLimits: TreeLimits.defaults, processes: [] }), code, 'incarnationId');
    rejects(() => TreeSnapshot.create({ incarnationId: tree.incarnationId, treeLimits: TreeLimits.defaults, processes: [1 as unknown as ProcessSnapshot] }), code, 'processes[0]');
  });

  function forgedAnswerTree(): TreeSnapshot {
    const parts = familyParts();
    const root = parts[0] as ProcessSnapshot;
    const forged = root.mailbox.records().map((record) =>
      record.kind === 'child_wait_answer' && record.retained
        ? MailboxRecord.childWaitAnswer(waitId, record.answered ?? [], Payload.encode({ forged: true }))
        : record,
    );
    const rebuilt = ProcessSnapshot.create({ ...root.toFields(), mailbox: Mailbox.create(forged, root.mailbox.cursor) });
    return treeOf([rebuilt, ...parts.slice(1)], { incarnationId: fixtureIncarnationId('family') });
  }

  function drainedTree(grandchildStatus: 'running' | 'completed'): () => TreeSnapshot {
    return () => {
      const root = fixtureProcessId('drained');
      const relation = ProcessRelation.root(root);
      const child = ProcessSnapshot.create(childProcessFields(relation, { slot: 0 }));
      const grandchild = ProcessSnapshot.create(childProcessFields(child.relation, { slot: 0, status: grandchildStatus }));
      const spec = ChildWaitSpec.create({
        key: WaitKey.parse('drain'),
        children: [child.processId],
        boundary: 'subtree_drained',
        condition: ChildWaitCondition.all(),
      });
      const wait = WaitId.derive(EffectId.derive(root, 1n, 1));
      const payload = childWaitSatisfiedPayload(spec, [{ result: child.result()!, subtreeUnresolved: [] }]);
      const mailbox = rootProcessFields({ rootId: root })
        .mailbox!.append(MailboxRecord.waitOpening(wait, { kind: 'children', spec }))
        .consume(1)
        .append(MailboxRecord.childWaitAnswer(wait, [child.processId], payload));
      const parent = ProcessSnapshot.create({ ...rootProcessFields({ rootId: root, committedSteps: 1n }), mailbox });
      return treeOf([parent, child, grandchild]);
    };
  }
});

describe('TreeSnapshot with interrupted and unknown evidence', () => {
  test('terminal unresolved ids survive a round trip', () => {
    const tree = interruptedRootTree({ status: 'canceled' });
    const back = TreeSnapshot.parse(tree.json());
    assert.deepEqual(
      back.root.termination?.unresolvedEffectIds.map(String),
      back.root.unknownEffectIds().map(String),
    );
    assert.equal(back.root.status, 'canceled');
  });

  test('interrupted terminal with a definite settlement lists no unresolved ids', () => {
    const tree = interruptedRootTree({ settlementStatus: 'succeeded' });
    assert.deepEqual(tree.root.unknownEffectIds(), []);
    assert.equal(tree.root.termination?.unresolvedEffectIds.length, 0);
  });

  test('a terminal root cannot keep a pending effect (through the tree)', () => {
    const pending = rootWithPreparedEffect('pending');
    rejects(
      () =>
        parseEdited(pending, (v) => {
          const process = v.process_snapshots[0];
          process.status = 'killed';
          process.finished_at = '2025-01-01T00:00:01Z';
          process.termination = JSON.parse(Termination.interrupted('engine_kill', 'killed').json());
        }),
      code,
      'cannot keep a pending effect',
    );
  });
});

describe('TreeSnapshot cached encoding', () => {
  const fixtures: Record<string, () => TreeSnapshot> = {
    running: () => runningRootTree({ pendingSignals: 3, consumedSignals: 2 }),
    unknown: () => rootWithPreparedEffect('settled', 'unknown'),
    children: () => treeWithChildren({ processes: 13, fanout: 3, childSignals: 2 }),
    family: () => family(),
  };
  for (const [name, build] of Object.entries(fixtures)) {
    test(`${name}: the digest hashed over cached pieces equals sha256 of the assembled bytes, and both equal a fresh encoding`, () => {
      const tree = build();
      const digestFirst = tree.digest; // before json(): hashed piece by piece
      const fresh = canonicalize(JSON.stringify(JSON.parse(tree.json())));
      assert.equal(tree.json(), fresh);
      assert.equal(digestFirst.toString(), Digest.of(Buffer.from(fresh)).toString());
      assert.equal(build().json(), fresh); // json() before digest: the same text
      assert.equal(tree.encodedSize, Buffer.byteLength(fresh));
      for (const process of tree.processSnapshots()) {
        assert.equal(process.json(), canonicalize(JSON.stringify(JSON.parse(process.json()))));
        assert.equal(process.encodedSize, Buffer.byteLength(process.json()));
        assert.equal(ProcessSnapshot.create(process.toFields()).json(), process.json());
      }
    });
  }

  test('equals compares piece by piece without assembling', () => {
    const a = treeWithChildren({ processes: 5, fanout: 2 });
    const b = treeWithChildren({ processes: 5, fanout: 2 });
    assert.ok(a.equals(b));
    assert.ok(!a.equals(treeWithChildren({ processes: 5, fanout: 2, committedSteps: 2n })));
    assert.ok(!a.equals(a.withIncarnation(fixtureIncarnationId('other'))));
    assert.ok(!a.equals(treeWithChildren({ processes: 5, fanout: 2, treeLimits: TreeLimits.of({ maxDepth: 3 }) })));
  });
});

describe('TreeSnapshot.withProcesses', () => {
  const tree = family();
  const [root, ...children] = tree.processSnapshots() as [ProcessSnapshot, ...ProcessSnapshot[]];
  const byKey = (key: string) => children.find((child) => child.relation.childKey?.toString() === key) as ProcessSnapshot;
  const completed = byKey('child-0');
  const running = byKey('child-1');
  const started = byKey('child-2');

  /** The tree `create` builds from the same merged members. */
  const created = (base: TreeSnapshot, changes: readonly ProcessSnapshot[]): TreeSnapshot => {
    const merged = new Map(base.processSnapshots().map((process) => [process.processId.toString(), process]));
    for (const change of changes) merged.set(change.processId.toString(), change);
    return TreeSnapshot.create({ incarnationId: base.incarnationId, treeLimits: base.treeLimits, processes: merged.values() });
  };

  /** Both paths agree: equal bytes and digest, or the same rejection. */
  const agree = (base: TreeSnapshot, changes: readonly ProcessSnapshot[], fragment?: string): TreeSnapshot | undefined => {
    if (fragment !== undefined) {
      rejects(() => created(base, changes), code, fragment);
      rejects(() => base.withProcesses(changes), code, fragment);
      return undefined;
    }
    const derived = base.withProcesses(changes);
    const full = created(base, changes);
    assert.equal(derived.digest.toString(), full.digest.toString());
    assert.equal(derived.json(), full.json());
    assert.equal(derived.encodedSize, full.encodedSize);
    assert.deepEqual(derived.processSnapshots().map(String), full.processSnapshots().map(String));
    assert.deepEqual(derived.children(rootId).map((child) => child.processId.toString()), full.children(rootId).map((child) => child.processId.toString()));
    return derived;
  };

  const newChild = (slot: number, fields: Partial<ProcessSnapshotCreateOptions> = {}): ProcessSnapshot =>
    ProcessSnapshot.create({
      ...childProcessFields(rootRelation, { slot, startEffect: EffectId.derive(rootId, 1n, slot), budget: childBudget, status: 'running' }),
      ...fields,
    });
  /** The root with room (allocations) for `extra` more children of childBudget. */
  const rootGranting = (extra: number, fields: Partial<ProcessSnapshotCreateOptions> = {}): ProcessSnapshot =>
    root.with({ allocatedResources: { steps: 30n + 10n * BigInt(extra), effects: 15n + 5n * BigInt(extra), signals: 15n + 5n * BigInt(extra) }, ...fields });

  test('replacing, adding and no change give the bytes and digest create gives', () => {
    assert.equal(tree.withProcesses([]), tree);
    agree(tree, [running.with({ committedSteps: 1n })]);
    agree(tree, [root.with({ committedSteps: 2n, pendingControl: root.pendingControl.with({ killReason: 'stop' }) })]);
    const grown = agree(tree, [rootGranting(1), newChild(5)]) as TreeSnapshot;
    assert.equal(grown.size, 5);
    agree(grown, [grown.process(newChild(5).processId)!.with({ committedSteps: 1n })]);
  });

  test('a derived tree keeps the pinned vectors', () => {
    const base = runningRootTree({ committedSteps: 3n });
    const pinned = runningRootTree();
    const derived = base.withProcesses([pinned.root]);
    assert.equal(derived.json(), pinnedRunningRoot);
    assert.equal(derived.digest.toString(), 'sha256:976bfec00db076492fed78dc37721836474fa9a69ce1692108af33bf39780d54');
  });

  test('a changed child is checked against its parent: capabilities, budget, keys and counts', () => {
    agree(tree, [running.with({ capabilities: CapabilitySet.of(['shell.exec']) })], 'holds capabilities its parent');
    agree(tree, [running.with({ budget: Budget.unlimited() })], 'has an unlimited steps budget from finite parent');
    agree(tree, [rootGranting(1), newChild(5, { relation: ProcessRelation.child(newChild(5).processId, rootRelation, ChildKey.parse('child-1')) })], 'two children with child key child-1');
    const limited = treeOf(tree.processSnapshots(), { incarnationId: tree.incarnationId, treeLimits: TreeLimits.of({ maxActiveChildren: 2, maxChildren: Quota.of(3) }) });
    agree(limited, [rootGranting(1), newChild(5)], 'more than max_children 3');
    agree(treeOf(tree.processSnapshots(), { incarnationId: tree.incarnationId, treeLimits: TreeLimits.of({ maxActiveChildren: 2 }) }), [rootGranting(1), newChild(5)], 'more than max_active_children 2');
    agree(tree, [newChild(5)], "children's steps grants sum to 40");
    const capped = treeOf(tree.processSnapshots(), { incarnationId: tree.incarnationId, treeLimits: TreeLimits.of({ maxTreeProcesses: Quota.of(4) }) });
    agree(capped, [rootGranting(1), newChild(5)], '5 processes exceed max_tree_processes 4');
  });

  test('a changed parent is checked against its unchanged children', () => {
    agree(tree, [root.with({ capabilities: CapabilitySet.of(['store.write']) })], 'holds capabilities its parent');
    agree(tree, [root.with({ allocatedResources: { steps: 30n, effects: 14n, signals: 15n } })], 'allocated_resources.effects is 14');
    const failure = Failure.create('contract', 'engine.child.input.invalid', 'child input is invalid');
    const prepared = root.prepared as PreparedStep;
    const failedStart = PreparedStep.create({ ...prepared, intent: prepared.intent, effects: [{ effect: prepared.effects()[0]!.effect, failure }] });
    agree(tree, [root.with({ prepared: failedStart })], 'yet the tree captures it');
    // A new child that its unchanged parent's retained start records as failed.
    const lone = fixtureProcessId('lone');
    const effect = Effect.startChild(fixtureChildSpec({ slot: 0 }));
    const failedOnly = ProcessSnapshot.create({
      ...rootProcessFields({ rootId: lone, committedSteps: 2n }),
      counters: { preparedEffects: 1n, droppedDeltas: 0n },
      prepared: PreparedStep.create({ processId: lone, stepSequence: 3n, candidateState: fixtureState(3), intent: Transition.continue(0, [effect]), effects: [{ effect, failure }] }),
    });
    const child = ProcessSnapshot.create(childProcessFields(ProcessRelation.root(lone), { slot: 0, startEffect: EffectId.derive(lone, 3n, 0) }));
    agree(treeOf([failedOnly]), [child], 'yet the tree captures it');
  });

  test('rendered facts of ancestors are re-checked when a child changes', () => {
    // The root's pending child-wait answer renders from the completed child's result.
    agree(tree, [completed.with({ output: Payload.encode({ other: true }) })], 'disagrees with the captured terminal results');
    // The root's retained start renders from the started child's request.
    agree(tree, [started.with({ childRequestDigest: Digest.of('another request') })], 'child_request_digest mismatch');
  });

  test('capacity and size are checked for the changed members and the whole', () => {
    const pending = (count: number) => {
      let mailbox = running.mailbox;
      for (let index = 0; index < count; index += 1) mailbox = mailbox.append(MailboxRecord.external(SignalRequest.create({ id: `late-${index}`, payload: Payload.emptyObject })));
      return running.with({ mailbox });
    };
    const limits = TreeLimits.of({ maxPendingSignals: 2n, maxSnapshotBytes: Quota.of(tree.encodedSize + 200) });
    const bounded = treeOf(tree.processSnapshots(), { incarnationId: tree.incarnationId, treeLimits: limits });
    agree(bounded, [pending(3)], '3 pending signals exceed max_pending_signals 2');
    agree(bounded, [running.with({ committedExecutionState: ExecutionState.encode('scope.test.fixture-state', { step: 0, padding: 'x'.repeat(400) }) })], 'exceeds max_snapshot_bytes');
  });

  test('a moved record, a second root, a missing parent or a repeated id is refused as create refuses it', () => {
    const orphan = ProcessSnapshot.create(childProcessFields(ProcessRelation.child(ProcessId.child(EffectId.derive(rootId, 9n, 0)), rootRelation, ChildKey.parse('ghost')), { slot: 0 }));
    agree(tree, [orphan], 'which is not in the tree');
    agree(tree, [runningRootTree({ rootId: fixtureProcessId('second') }).root], 'needs exactly one root');
    rejects(() => tree.withProcesses([running, running]), code, `process ${running.processId.toString()} appears twice`);
    const moved = ProcessSnapshot.create({ ...running.toFields(), relation: ProcessRelation.child(running.processId, completed.relation, ChildKey.parse('child-1')) });
    agree(tree, [moved], "allocated_resources.steps is 30, but its children's steps grants sum to 20");
  });
});
