import { ErrorCode, KernelError, type ProcessSnapshot } from '../../kernel/index.js';
import { codedError, HostErrorCode, invalidRequest } from '../../errors.js';
import type { Json, Page, SignalInput, WaitQuery, WaitView } from '../host.js';
import type { AnswerClaims } from './answer-claims.js';
import { answerSignalId, gateIdOf, parseGateId } from './gate-id.js';
import { gatePage } from './gate-page.js';
import { decodeGateRecord, type GateProvenance, gateRecordSuffix } from './gate-record.js';
import { answerViewOf, type GateAnswerView, type GateKind, gateKindOf, gatePromptOf, type GateState, type GateView } from './gate-view.js';

/** One wait of a process's mailbox (the kernel keeps its record type internal). */
export type MailboxWait = ReturnType<ProcessSnapshot['mailbox']['waits']>[number];

/** What the gate service needs of the Host (the public Host surface and its stores, nothing more). */
export interface GatePort {
  /** The open waits (`GET /v1/waits`), across nodes in Redis mode, narrowed by tenant. */
  waits(query: WaitQuery): Promise<readonly WaitView[]>;
  /** A process's snapshot (its runtime's here, else the stored head) and its root; `process_not_found` otherwise. */
  locate(processId: string): Promise<{ readonly root: string; readonly snapshot: ProcessSnapshot }>;
  /** Every member of a tree (its runtime's here, else the stored head); `tree_not_found` otherwise. */
  members(rootId: string): Promise<readonly ProcessSnapshot[]>;
  /** The tree's tenant. */
  tenantOf(rootId: string): Promise<string | undefined>;
  /** The wait's answer schema and its deployment's description, as the descriptor says (null when this node cannot tell). */
  describe(process: ProcessSnapshot, wait: MailboxWait): { readonly answerSchema: Json | null; readonly description: string | null };
  /** `POST /v1/processes/{id}/signals`: routed to the tree's owner (throws where it lives). */
  deliverSignals(processId: string, signals: readonly SignalInput[], agency: 'user' | 'machine'): Promise<{ accepted: boolean }>;
  readRecord(rootId: string, suffix: string): Promise<string | undefined>;
  readonly claims: AnswerClaims;
}

export interface GateQuery {
  /** Only process-owned or only host-owned gates (both by default). */
  readonly owner?: 'process' | 'host';
  readonly state?: GateState;
  readonly kind?: GateKind;
  readonly deployment?: string;
  readonly rootId?: string;
  readonly cursor?: string;
  readonly limit?: number;
  readonly tenant?: string;
}

export interface GateAnswerInput {
  readonly answer: Json;
  readonly requestId: string;
  /** Who answers, as a label: the authenticated principal when there is one, else what the caller said. */
  readonly actor: string | null;
}

export interface GateAnswerOutcome {
  /** False when this request had been admitted before (the same request id with the same answer). */
  readonly accepted: boolean;
  readonly gate: GateView;
}

/** Refusals of an answer that mean the wait is no longer the current one (answered, or ended). */
const moved: ReadonlySet<string> = new Set([ErrorCode.signalRejected, ErrorCode.processFinished, ErrorCode.signalConflict]);

/**
 * Process-owned gates (docs: README "Gates"): the person-facing face of every external wait. Nothing of
 * a gate is kept apart from its wait: it is listed from the open-wait index (so only once the wait's
 * commit was acknowledged), its state is read off the head (answered iff the head holds the answer),
 * and an answer is a signal addressed to the wait, whose commit carries the gate's answer record
 * (answer-claims.ts). Exactly once comes from the mailbox: one wait takes one answer, on the owner.
 */
export class GateService {
  readonly #port: GatePort;

  constructor(port: GatePort) {
    this.#port = port;
  }

  async page(query: GateQuery): Promise<Page<GateView>> {
    return gatePage(await this.list(query), query.cursor, query.limit);
  }

  /** The gates a query names, unpaged (host-owned gates are merged in by the Host before paging). */
  async list(query: GateQuery): Promise<GateView[]> {
    const state = query.state ?? 'open';
    let gates: GateView[];
    if (state === 'open') {
      const waits = await this.#port.waits({
        ...(query.deployment === undefined ? {} : { deployment: query.deployment }),
        ...(query.rootId === undefined ? {} : { rootId: query.rootId }),
        ...(query.tenant === undefined ? {} : { tenant: query.tenant }),
      });
      gates = waits.filter((wait) => wait.waitKind === 'external').map(openGateOf);
    } else {
      // Answered and closed gates are read off a tree's head: there is no index of them across trees.
      if (query.rootId === undefined) throw invalidRequest(`${state} process-owned gates are listed per tree: pass rootId (or owner=host)`);
      gates = await this.#treeGates(query.rootId, query.tenant);
      gates = gates.filter((gate) => gate.state === state && (query.deployment === undefined || gate.subject.deployment === query.deployment));
    }
    if (query.kind !== undefined) gates = gates.filter((gate) => gate.kind === query.kind);
    return gates;
  }

  /** One gate, wherever its process lives. */
  async gate(gateId: string): Promise<GateView> {
    const ids = parseGateId(gateId);
    if (ids === undefined) throw gateNotFound(gateId);
    let located: { readonly root: string; readonly snapshot: ProcessSnapshot };
    try {
      located = await this.#port.locate(ids.processId);
    } catch (error) {
      if (error instanceof KernelError && error.code === HostErrorCode.processNotFound) throw gateNotFound(gateId);
      throw error;
    }
    const wait = located.snapshot.mailbox.waits().find((candidate) => candidate.waitId.toString() === ids.waitId);
    if (wait === undefined || wait.kind !== 'external') throw gateNotFound(gateId);
    const view = await this.#viewOf(located.root, located.snapshot, wait);
    if (view.state !== 'open') return view;
    // Open: when it opened is the inbox's to say.
    const listed = (await this.#port.waits({ rootId: located.root })).find((entry) => entry.processId === ids.processId && entry.waitId === ids.waitId);
    return listed === undefined ? view : { ...view, openedAt: listed.since };
  }

  /**
   * Answers a gate: one signal addressed to its wait, delivered on the tree's owner (forwarded there
   * from any node). The kernel validates it against the wait's schema before anything is committed
   * (422 with pointers, the gate stays open) and admits at most one answer per wait; the commit that
   * admits it carries the gate record with `provenance`, which only the server sets.
   */
  async answer(gateId: string, input: GateAnswerInput, provenance: GateProvenance, rule: string | null = null, guard?: () => void): Promise<GateAnswerOutcome> {
    const before = await this.gate(gateId);
    const { processId, waitId } = before.subject;
    const signalId = answerSignalId(gateId, input.requestId);
    const withdraw = this.#port.claims.expect(processId, signalId, { provenance, actor: input.actor, requestId: input.requestId, rule });
    try {
      // A policy's decision binds the head it read (policy-runner.ts): checked last, right before the delivery.
      guard?.();
      // A person answers through this route; a policy is the machine.
      const outcome = await this.#port.deliverSignals(processId, [{ id: signalId, waitId, payload: input.answer }], provenance === 'policy' ? 'machine' : 'user');
      return { accepted: outcome.accepted, gate: await this.gate(gateId) };
    } catch (error) {
      if (error instanceof KernelError && moved.has(error.code)) {
        const now = await this.gate(gateId);
        if (now.state === 'answered') throw alreadyAnswered(gateId, now.answer);
        if (now.state === 'closed') throw codedError(HostErrorCode.gateClosed, `gate ${gateId} is closed: its wait ended without an answer`, error);
      }
      throw error;
    } finally {
      withdraw();
    }
  }

  async #treeGates(rootId: string, tenant: string | undefined): Promise<GateView[]> {
    if (tenant !== undefined && (await this.#port.tenantOf(rootId)) !== tenant) return [];
    const gates: GateView[] = [];
    for (const process of await this.#port.members(rootId)) {
      for (const wait of process.mailbox.waits()) {
        if (wait.kind === 'external') gates.push(await this.#viewOf(rootId, process, wait));
      }
    }
    return gates;
  }

  async #viewOf(root: string, process: ProcessSnapshot, wait: MailboxWait): Promise<GateView> {
    const processId = process.processId.toString();
    const waitId = wait.waitId.toString();
    const state: GateState = wait.answered ? 'answered' : !process.isTerminal && process.waitId?.equals(wait.waitId) === true ? 'open' : 'closed';
    const { answerSchema, description } = this.#port.describe(process, wait);
    let answer: GateAnswerView | null = null;
    if (state === 'answered') {
      const record = decodeGateRecord(await this.#port.readRecord(root, gateRecordSuffix(processId, waitId)));
      answer = record === undefined ? unrecordedAnswer(process, wait) : answerViewOf(record);
    }
    return {
      gateId: gateIdOf(processId, waitId),
      owner: 'process',
      kind: gateKindOf(answerSchema),
      state,
      subject: { processId, rootId: root, deployment: process.deploymentRef.name, waitId, key: wait.key.toString() },
      prompt: gatePromptOf(wait.prompt ?? description, answerSchema),
      answerSchema,
      openedAt: null,
      answer,
    };
  }
}

function openGateOf(wait: WaitView): GateView {
  return {
    gateId: gateIdOf(wait.processId, wait.waitId),
    owner: 'process',
    kind: gateKindOf(wait.answerSchema),
    state: 'open',
    subject: { processId: wait.processId, rootId: wait.rootId, deployment: wait.deployment, waitId: wait.waitId, key: wait.key },
    prompt: gatePromptOf(wait.prompt ?? wait.description, wait.answerSchema),
    answerSchema: wait.answerSchema,
    openedAt: wait.since,
    answer: null,
  };
}

/** A wait answered without a record (answered before gates were recorded): the signal path, time unknown. */
function unrecordedAnswer(process: ProcessSnapshot, wait: MailboxWait): GateAnswerView {
  const record = wait.answerIndex === undefined ? undefined : process.mailbox.record(wait.answerIndex);
  return { answeredAt: null, provenance: 'api', actor: null, requestId: null, rule: null, signalId: record?.id?.toString() ?? '' };
}

function gateNotFound(gateId: string): KernelError {
  return codedError(HostErrorCode.gateNotFound, `no gate ${gateId}`);
}

function alreadyAnswered(gateId: string, answer: GateAnswerView | null): KernelError {
  const error = codedError(
    HostErrorCode.gateAlreadyAnswered,
    `gate ${gateId} was answered already${answer === null ? '' : ` (${answer.provenance}${answer.actor === null ? '' : ` by ${answer.actor}`}${answer.answeredAt === null ? '' : ` at ${answer.answeredAt}`})`}`,
  );
  if (answer !== null) Object.assign(error, { firstAnswer: { answeredAt: answer.answeredAt, provenance: answer.provenance, actor: answer.actor } });
  return error;
}
