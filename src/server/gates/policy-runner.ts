import type { Logger } from 'pino';
import { KernelError, Payload, type ProcessSnapshot, Schema } from '../../kernel/index.js';
import { HostErrorCode } from '../../errors.js';
import type { Json } from '../host.js';
import { openWaitOf } from '../open-waits.js';
import type { GateAnswerInput, GateAnswerOutcome, MailboxWait } from './gate-service.js';
import { gateIdOf } from './gate-id.js';
import type { GatePolicy, PolicyDecision, PolicyGate } from './gate-policies.js';
import type { PolicyBreaker } from './policy-breaker.js';
import { gateKindOf, gatePromptOf } from './gate-view.js';

/** What the runner needs of the Host: the owner's view of a tree, the catalog, and the gate route's answer path. */
export interface PolicyRunnerPort {
  /** The head this node's runtime of `root` acknowledged last (undefined when the tree is not here). */
  head(root: string): { readonly digest: string; process(processId: string): ProcessSnapshot | undefined } | undefined;
  /** The policies of the process's exact DeploymentRef. */
  policiesOf(process: ProcessSnapshot): readonly GatePolicy[];
  /** The wait's answer schema and description, as the gate service reads them. */
  describe(process: ProcessSnapshot, wait: MailboxWait): { readonly answerSchema: Json | null; readonly description: string | null };
  /** The gate route's answer path with provenance `policy`; `guard` runs right before the delivery. */
  answer(gateId: string, input: GateAnswerInput, rule: string, guard: () => void): Promise<GateAnswerOutcome>;
}

export interface PolicyRunnerOptions {
  readonly port: PolicyRunnerPort;
  readonly breaker: PolicyBreaker;
  readonly logger?: Logger;
  /** How long one `decide` may take before it counts as a failure (default {@link defaultDecideTimeoutMs}). */
  readonly decideTimeoutMs?: number;
  /** Tests: runs between a policy's decision and its answer (to move the head in between). */
  readonly afterDecision?: (gate: PolicyGate, rule: string) => Promise<void>;
}

/** A policy is pure and quick: one that has not decided in this long failed (the gate stays open). */
export const defaultDecideTimeoutMs = 10_000;

/** Thrown by the guard: the head the decision read is no longer the head. */
class HeadMoved extends Error {}

const timedOut = new Error('the policy did not decide in time');

/** Refusals that mean someone else's answer (or the wait's end) came first: not the policy's failure. */
const lostRace: ReadonlySet<string> = new Set([HostErrorCode.gateAlreadyAnswered, HostErrorCode.gateClosed]);

/**
 * Runs a deployment's gate policies on the tree's owner once a gate is listed (its wait's commit was
 * acknowledged: the Host calls {@link waitOpened} from that commit's `agent.step.committed`). Each gate
 * is considered once per owner. The policies are asked in order; the first answer is delivered through
 * the gate route's own answer path (provenance `policy`, the rule recorded), so it races people for the
 * one answer the wait takes. The decision binds the head it read: if the head moved before the answer
 * is handed over, the policy abstains. A throw, an answer the schema refuses or a refused delivery is a
 * failure (logged; the gate stays open) and counts toward the tree's breaker.
 */
export class PolicyRunner {
  readonly #options: PolicyRunnerOptions;
  /** Gates already considered here (a wait that commits `waiting` again after a note is not asked twice). */
  readonly #considered = new Map<string, string>();
  readonly #running = new Set<Promise<void>>();

  constructor(options: PolicyRunnerOptions) {
    this.#options = options;
  }

  /** A process of `root` committed `waiting`: consider its gate (runs in the background). */
  waitOpened(root: string, processId: string): void {
    const run = this.#consider(root, processId).catch((error: unknown) => this.#options.logger?.error({ err: error, rootId: root, processId }, 'gate policy run failed unexpectedly'));
    this.#running.add(run);
    void run.finally(() => this.#running.delete(run));
  }

  /** Resolves once every policy run started so far has ended (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  /** The tree left this node: a later owner (maybe this node again) considers its gates afresh. */
  forget(root: string): void {
    for (const [gateId, of] of [...this.#considered]) if (of === root) this.#considered.delete(gateId);
    this.#options.breaker.forget(root);
  }

  async #consider(root: string, processId: string): Promise<void> {
    const { port, breaker, logger } = this.#options;
    const head = port.head(root);
    const process = head?.process(processId);
    if (head === undefined || process === undefined) return;
    const open = openWaitOf(process);
    const wait = open === undefined ? undefined : process.mailbox.wait(open.waitId);
    if (wait === undefined || wait.kind !== 'external') return;
    const policies = port.policiesOf(process);
    if (policies.length === 0) return;
    const gateId = gateIdOf(processId, wait.waitId.toString());
    if (this.#considered.has(gateId)) return;
    this.#considered.set(gateId, root);
    const log = logger?.child({ rootId: root, processId, gateId });
    if (breaker.tripped(root)) {
      log?.warn('gate policies skipped: the tree’s policy breaker is tripped');
      return;
    }
    const gate = this.#factsOf(root, process, wait, gateId);
    const failed = (rule: string, cause: string, error?: unknown): void => {
      log?.warn({ rule, cause, ...(error === undefined ? {} : { err: error }) }, 'gate policy failed; the gate stays open');
      if (breaker.failed(root, `${rule}: ${cause}`)) log?.error({ rule }, 'gate policy breaker tripped: policies no longer run in this tree');
    };
    for (const policy of policies) {
      let decision;
      try {
        decision = await this.#decide(policy, gate);
      } catch (error) {
        failed(policy.rule, error === timedOut ? 'decide timed out' : 'decide threw', error === timedOut ? undefined : error);
        return;
      }
      if (decision === 'abstain') {
        log?.info({ rule: policy.rule }, 'gate policy abstained');
        continue;
      }
      if (typeof decision !== 'object' || decision === null || !Object.hasOwn(decision, 'answer')) {
        failed(policy.rule, 'decide returned neither {answer} nor "abstain"');
        return;
      }
      if (!valid(gate.wait.answerSchema, decision.answer)) {
        failed(policy.rule, 'the answer does not satisfy the gate’s answer schema');
        return;
      }
      await this.#options.afterDecision?.(gate, policy.rule);
      const guard = (): void => {
        if (port.head(root)?.digest !== head.digest) throw new HeadMoved();
      };
      try {
        await port.answer(gateId, { answer: decision.answer, requestId: `policy:${policy.rule}`, actor: `policy:${policy.rule}` }, policy.rule, guard);
      } catch (error) {
        if (error instanceof HeadMoved) {
          log?.info({ rule: policy.rule, readHead: head.digest }, 'gate policy abstained: the head moved since its decision');
          return;
        }
        if (error instanceof KernelError && lostRace.has(error.code)) {
          log?.info({ rule: policy.rule, code: error.code }, 'gate policy lost the race: the gate was answered or closed first');
          return;
        }
        failed(policy.rule, `the answer was refused (${error instanceof KernelError ? error.code : 'error'})`, error);
        return;
      }
      breaker.succeeded(root);
      log?.info({ rule: policy.rule }, 'gate answered by policy');
      return;
    }
  }

  /** `decide`, bounded in time (a rule that never answers must not hold the gate's run forever). */
  async #decide(policy: GatePolicy, gate: PolicyGate): Promise<PolicyDecision> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(timedOut), this.#options.decideTimeoutMs ?? defaultDecideTimeoutMs);
      timer.unref();
    });
    try {
      return await Promise.race([Promise.resolve().then(() => policy.decide(gate)), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  #factsOf(root: string, process: ProcessSnapshot, wait: MailboxWait, gateId: string): PolicyGate {
    const { answerSchema, description } = this.#options.port.describe(process, wait);
    const state = process.committedExecutionState;
    return {
      gateId,
      kind: gateKindOf(answerSchema),
      processId: process.processId.toString(),
      rootId: root,
      deployment: process.deploymentRef.name,
      deploymentRef: process.deploymentRef.toString(),
      wait: { waitId: wait.waitId.toString(), key: wait.key.toString(), prompt: wait.prompt ?? null, answerSchema },
      prompt: gatePromptOf(wait.prompt ?? description, answerSchema),
      state: { kind: state.kind, value: state.payload.decode<Json>() },
    };
  }
}

/** The answer checked as the gate route checks it: against the schema the gate shows (null: any JSON). */
function valid(schema: Json | null, answer: Json): boolean {
  try {
    const payload = Payload.encode(answer);
    return schema === null || Schema.of(schema).accepts(payload);
  } catch {
    return false;
  }
}
