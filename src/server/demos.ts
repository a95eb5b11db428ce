import { approvalDefinition } from '../../strategies/demo/approval.js';
import { counterDefinition } from '../../strategies/demo/counter.js';
import { echoDefinition } from '../../strategies/demo/echo.js';
import { fanoutDefinition } from '../../strategies/demo/fanout.js';
import { sleepDefinition } from '../../strategies/demo/sleep.js';
import { unreliableDefinition } from '../../strategies/demo/unreliable.js';
import { coordinationExamples } from './examples/coordination.js';
import { type Definition, Deployment, Digest, type Dispatcher } from '../kernel/index.js';
import { echoDispatcher, sleepDispatcher, unreliableDispatcher } from './demo-dispatchers.js';
import { collaborationExamples } from './examples/collaboration.js';
import { messagingDeployments } from './examples/messaging.js';
import { interactionExamples } from './examples/interaction.js';
import { planningDeployments } from './examples/planning.js';
import { workflowExamples } from './examples/workflow.js';
import type { DeliveryHost } from './messaging-delivery.js';
import type { ModelDispatcherOptions } from './model/model-settings.js';
import { modelDispatcherFor } from './model/server-model.js';
import type { DeploymentEntry } from './catalog.js';
import { type GatePolicy, withGatePolicies } from './gates/gate-policies.js';
import { approvalAutoPolicy } from './examples/approval-policy.js';
import type { TimerService } from './timers/timer-service.js';

/**
 * The six built-in demo deployments (rest-api.md, "Built-in demo deployments"). Their
 * implementation and configuration digests are fixed strings' SHA-256, so a tree stored by one
 * server binds exactly the same DeploymentRefs in the next one (restore needs the exact ref). Bump
 * the version in a digest text whenever a demo's behaviour changes.
 */
export const demoNames = ['demo.echo', 'demo.approval', 'demo.counter', 'demo.sleep', 'demo.unreliable', 'demo.fanout'] as const;

function demo(name: string, definition: Definition, dispatcher?: Dispatcher): Deployment {
  const config = {
    definition,
    dispatcher,
    implementationDigest: Digest.of(`scope:${name}:implementation:v1`),
    configurationDigest: Digest.of(`scope:${name}:configuration:v1`),
  };
  const policies = demoPolicies[name];
  // A demo with gate policies has them folded into its configuration digest (gates/gate-policies.ts).
  return policies === undefined ? Deployment.create(config) : withGatePolicies(config, policies).deployment;
}

/** The demos' gate policies, by deployment name. */
const demoPolicies: Readonly<Record<string, readonly GatePolicy[]>> = { 'demo.approval': [approvalAutoPolicy] };

/** The demo deployments as catalog entries: those with gate policies carry them. */
export function demoEntries(options: DemoOptions = {}): DeploymentEntry[] {
  return demoDeployments(options).map((deployment) => {
    const policies = demoPolicies[deployment.ref.name];
    return policies === undefined ? deployment : { deployment, policies };
  });
}

/** What the demo deployments are built with. */
export interface DemoOptions {
  /** Ends demo sleeps early when the server stops waiting for dispatches. */
  readonly shutdown?: AbortSignal;
  /** The Host whose delivery port carries cross-tree messages (without it the messaging example refuses every message). */
  readonly host?: () => DeliveryHost;
  /** The server's model endpoint for the example agents (`modelDispatcherFor(model)`, src/server/model/server-model.ts). */
  readonly model?: ModelDispatcherOptions;
  /** The Host's timer service: demo.sleep and the Deadline example become durable timers (src/server/timers/). */
  readonly timers?: () => TimerService | undefined;
}

/** Fresh demo deployments (each call builds new dispatchers; unreliable keeps per-instance state). */
export function demoDeployments(options: DemoOptions = {}): Deployment[] {
  // demo.fanout binds this exact echo Deployment, so its children start and restore from the binding.
  const echo = demo('demo.echo', echoDefinition, echoDispatcher());
  return [
    echo,
    demo('demo.approval', approvalDefinition),
    demo('demo.counter', counterDefinition),
    demo('demo.sleep', sleepDefinition, sleepDispatcher(options.shutdown, options.timers)),
    demo('demo.unreliable', unreliableDefinition, unreliableDispatcher()),
    demo('demo.fanout', fanoutDefinition(echo)),
    ...messagingDeployments({ host: options.host }),
    ...workflowExamples({ echo }),
    ...coordinationExamples({ echo, shutdown: options.shutdown, timers: options.timers }),
    ...collaborationExamples({ shutdown: options.shutdown, timers: options.timers }),
    ...planningDeployments(),
    ...interactionExamples({ model: modelDispatcherFor(options.model) }),
  ];
}
