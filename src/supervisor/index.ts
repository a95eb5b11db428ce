/** The process supervisor: long-lived worker processes with leases, retirement, reaping and drains. */
export { baseEnv, checkEnvEntry, fallbackPath, inheritedEnvNames } from './base-env.js';
export { Child, defaultChildOptions, type ChildOptions } from './child.js';
export { DrainHold, type KeyMatch } from './drain-hold.js';
export { isSupervisorError, SupervisorError, SupervisorErrorCode, supervisorErrorCodeValues } from './errors.js';
export { generationStateValues, type GenerationState } from './generation.js';
export { Lease } from './lease.js';
export { isSupervisedProcess, type StartContext, type Started, type Starter, type SupervisedProcess } from './supervised-process.js';
export {
  defaultSupervisorOptions,
  Supervisor,
  type BusyCheck,
  type CloseOptions,
  type DrainOptions,
  type GenerationInfo,
  type LeaseOptions,
  type SupervisorOptions,
} from './supervisor.js';
export { maxTimerMs, systemTimers, type Timer, type Timers } from './timers.js';
