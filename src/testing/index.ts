export {
  committerConformanceCases,
  ConformanceFailure,
  runConformanceCase,
  runTreeCommitterConformance,
  type CommitterConformanceCase,
  type TreeStoreFactory,
} from './committer-conformance.js';
export { conformanceTrees, type ConformanceTrees } from './conformance-trees.js';
export * from './definition-conformance.js';
export * from './resolver-conformance.js';
export * from './scripted-dispatcher.js';
export * from './snapshot-fixtures.js';
