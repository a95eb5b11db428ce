/**
 * The kernel's public surface is curated (style.md): `src/kernel/index.ts` exports exactly the names
 * pinned here. Adding or removing one is a decision, so it is a visible change to this list.
 * And plugins reach the world only through the Host: they import the kernel's public surface and
 * the Host interface, never Redis, BullMQ, the Engine's internals or the stores.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { imports, sources } from './source-scan.js';
import ts from 'typescript';

const root = resolve(dirname(new URL(import.meta.url).pathname), '../..');

const pinned = [
  'Budget', 'BudgetConfig', 'CallbackPanicError', 'CapabilitySet', 'ChildKey', 'ChildSpec', 'ChildWaitCondition', 'ChildWaitSpec',
  'ClassifiedError', 'Clock', 'CommitContext', 'DeltaEmitter', 'DeltaListener', 'DeltaListenerLike', 'Definition', 'Delta', 'Deployment',
  'DeploymentConfig', 'DeploymentRef', 'DeploymentResolver', 'Descriptor', 'DescriptorConfig', 'Digest', 'Dispatcher', 'Effect',
  'EffectAttemptId', 'EffectBoundary', 'EffectBoundaryKind', 'EffectId', 'EffectRequest', 'EffectTarget', 'Engine', 'EngineConfig',
  'ErrorCode', 'Event', 'EventListener', 'EventListenerLike', 'EventName', 'Execution', 'ExecutionState', 'Failure', 'FailureKind',
  'KernelError', 'MapDeploymentResolver', 'Payload', 'Process', 'ProcessAdmission', 'ProcessAdmitter', 'ProcessId', 'ProcessInspection',
  'ProcessSnapshot', 'Quota', 'ReplayPolicy', 'Result', 'RuntimeError', 'Schema', 'SchemaValidationError', 'SchemaViolation',
  'Settlement', 'SettlementStatus', 'Signal', 'SignalId', 'SignalRequest', 'StartOptions', 'Status', 'TerminalStatus', 'Termination',
  'TerminationCause', 'Transition', 'TransitionKind', 'TreeActivation', 'TreeCheckpoint', 'TreeCheckpointKind', 'TreeCommitter',
  'TreeIncarnationId', 'TreeInspection', 'TreeLimits', 'TreeLimitsConfig', 'TreeSnapshot', 'TreeStore', 'Usage', 'WaitId', 'WaitKey',
  'CurrentWait', 'WaitDeclaration', 'WaitDeclarationConfig', 'WaitOptions',
  // What the Host reads of a process's current step and needs to check its own input the kernel's way.
  'PreparedStep', 'PreparedEffect', 'EffectPhase', 'isStatus', 'validDiagnostic', 'timestampToDate', 'parseReplayPolicy', 'ProcessRelation',
  'canonicalize', 'commitConflict', 'computeDigest', 'defaultTreeLimits', 'encodeCanonical', 'eventNameValues', 'eventNames',
  'failureKindValues', 'hasCode', 'isIdentityText', 'isQualifiedName', 'isTerminalStatus', 'maxPayloadBytes', 'maxPayloadDepth', 'parseCapability',
  'replayPolicyValues', 'settlementStatusValues', 'statusValues', 'systemClock', 'terminalStatusValues', 'terminationCauseValues',
  'treeIncarnationConflict',
  // What hibernation and a takeover read of a head: whether anything but a command would move it.
  'isParkedTree',
  // What the Host needs to cancel a stored tree no node can run (a superseded tree: src/server/succession.ts).
  'cancelStoredTree', 'StoredCancellation', 'StoredCancellationOptions',
  // The kernel's JSON Schema dialect, for host-owned gates' answer schemas (src/server/gates/answer-schema.ts).
  'createSchemaAjv',
].sort();

/** Every name `src/kernel/index.ts` exports, types included, as the compiler sees them. */
function exportedNames(): string[] {
  const entry = join(root, 'src/kernel/index.ts');
  const program = ts.createProgram([entry], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(entry);
  assert.ok(source);
  const module = checker.getSymbolAtLocation(source);
  assert.ok(module);
  return checker.getExportsOfModule(module).map((symbol) => symbol.getName()).sort();
}

test('src/kernel/index.ts exports exactly the pinned public surface', () => {
  assert.deepEqual(exportedNames(), pinned);
});

test('the runtime values of the surface are all defined', async () => {
  const kernel = (await import('../../src/kernel/index.js')) as Record<string, unknown>;
  const values = Object.keys(kernel).sort();
  assert.ok(values.length > 40);
  for (const name of values) {
    assert.ok(pinned.includes(name), `${name} is exported but not pinned`);
    assert.notEqual(kernel[name], undefined, name);
  }
});

test('the package entry points are the curated surfaces', () => {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, string> };
  assert.equal(manifest.exports['.'], './src/kernel/index.ts');
  assert.equal(manifest.exports['./testing'], './src/testing/index.ts');
});



test('plugins reach the system only through the Host, the kernel surface and the code catalogue', () => {
  const allowedSource = new Set(['src/kernel/index.ts', 'src/server/host.ts', 'src/errors.ts']);
  const forbiddenPackages = /^(ioredis|bullmq|redis)(\/|$)/;
  const plugins = join(root, 'plugins');
  const files = sources(plugins);
  assert.ok(files.length >= 10, 'the scan sees the plugins');
  const violations: string[] = [];
  for (const file of files) {
    for (const specifier of imports(file)) {
      if (forbiddenPackages.test(specifier)) {
        violations.push(`${relative(root, file)} → ${specifier}`);
        continue;
      }
      if (!specifier.startsWith('.')) continue;
      const target = relative(root, resolve(dirname(file), specifier)).replace(/\.js$/, '.ts');
      if (target.startsWith('plugins/')) continue;
      if (!allowedSource.has(target)) violations.push(`${relative(root, file)} → ${specifier}`);
    }
  }
  assert.deepEqual(violations, []);
});
