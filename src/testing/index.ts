export {
  committerConformanceCases,
  ConformanceFailure,
  runConformanceCase,
  runTreeCommitterConformance,
  type CommitterConformanceCase,
  type TreeStoreFactory,
} from './committer-conformance.js';
export { conformanceTrees, type ConformanceTrees } from './conformance-trees.js';
export * from './snapshot-fixtures.js';
