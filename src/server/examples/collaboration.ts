import { collaborationDefinition } from '../../../strategies/collaboration/collaboration.js';
import {
  researchCoordinatorDefinition,
  researchCoordinatorName,
  researchName,
  researchNotesDefinition,
  researchNotesName,
  researchOutputSchema,
  researchStateSchema,
  researchSurveyDefinition,
  researchSurveyName,
} from '../../../strategies/collaboration/research.js';
import { Budget, CapabilitySet, type Definition, Deployment, Digest, type Dispatcher, Quota } from '../../kernel/index.js';
import { echoDispatcher, sleepDispatcher } from '../demo-dispatchers.js';
import type { TimerService } from '../timers/timer-service.js';

/**
 * The collaboration example deployments (docs/strategies/collaboration.md):
 * `example.collaboration.research` and the three Deployments it binds — its scripted coordinator
 * and its two workers, which run on the demo echo and sleep Dispatchers. Fixed digests, like the
 * demos, so a stored tree binds the same DeploymentRefs on the next server; bump the version in a
 * digest text whenever the behaviour changes.
 */
function example(name: string, definition: Definition, dispatcher?: Dispatcher): Deployment {
  return Deployment.create({
    definition,
    dispatcher,
    implementationDigest: Digest.of(`scope:${name}:implementation:v1`),
    configurationDigest: Digest.of(`scope:${name}:configuration:v1`),
  });
}

/** Each child's permanent grant: finite, so the default root grant (finite signals) can give it. */
const childBudget = Budget.of({ steps: Quota.of(8), effects: Quota.of(4), signals: Quota.of(16) });

/** `timers`: the Host's timer service, which makes the survey task's sleep a durable timer (src/server/timers/). */
export function collaborationExamples(options: { readonly shutdown?: AbortSignal; readonly timers?: () => TimerService | undefined } = {}): Deployment[] {
  const coordinator = example(researchCoordinatorName, researchCoordinatorDefinition);
  const notes = example(researchNotesName, researchNotesDefinition, echoDispatcher());
  const survey = example(researchSurveyName, researchSurveyDefinition, sleepDispatcher(options.shutdown, options.timers));
  const binding = (deployment: Deployment) => ({ deployment, budget: childBudget, capabilities: CapabilitySet.empty });
  const research = example(
    researchName,
    collaborationDefinition({
      name: researchName,
      description: 'A scripted research collaboration: a notes and a survey task beside coordinator turns; reports both outcomes.',
      coordinator: binding(coordinator),
      workers: [binding(notes), binding(survey)],
      stateSchema: researchStateSchema,
      outputSchema: researchOutputSchema,
      maxTurns: Quota.of(6),
      maxTasks: Quota.of(4),
      maxConcurrentTasks: 2,
      maxControlsPerTurn: 2,
    }),
  );
  return [research, coordinator, notes, survey];
}
