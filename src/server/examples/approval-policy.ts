import type { GatePolicy } from '../gates/gate-policies.js';

/** The subject prefix that asks demo.approval's policy to approve without a person. */
export const autoApprovePrefix = 'auto-approve:';

/**
 * demo.approval's gate policy (README "Gates", "Auto-decisions by policy"): approves when the subject the
 * process was started with says so (`auto-approve: …`), else abstains and the gate waits for a person.
 * Pure: it reads only the gate's facts (here the process's committed state, which carries the subject).
 */
export const approvalAutoPolicy: GatePolicy = {
  rule: 'demo.approval.subject-says-auto-approve',
  version: '1',
  decide(gate) {
    const state = gate.state.value;
    const subject = typeof state === 'object' && state !== null && !Array.isArray(state) ? state.subject : undefined;
    if (typeof subject !== 'string' || !subject.startsWith(autoApprovePrefix)) return 'abstain';
    return { answer: { approved: true, comment: 'approved by policy: the subject asked for it' } };
  },
};
