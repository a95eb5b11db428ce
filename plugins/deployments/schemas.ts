/** The deployment catalog: what can be started, with its input, output and signal contracts. */
import { Type, type TSchema } from '@sinclair/typebox';
import { anyJson, closedObject, qualifiedName, ref } from '../shared.js';

export const WaitDeclaration = closedObject(
  {
    key: Type.String({ description: 'The wait key.' }),
    description: Type.String({ description: 'What waits under this key ask for.' }),
    answerSchema: anyJson('JSON Schema (2020-12) every answer addressed to such a wait must satisfy.'),
  },
  { $id: 'WaitDeclaration', description: 'A wait a deployment declares in its contract.' },
);

export const Deployment = closedObject(
  {
    name: qualifiedName('The deployment name.', 'demo.echo'),
    description: Type.String(),
    deploymentRef: Type.String({ description: '`<name>+sha256:<hex>`: the exact behaviour and bindings.' }),
    inputSchema: anyJson('JSON Schema (2020-12) of the process input.'),
    outputSchema: anyJson('JSON Schema (2020-12) of the completed output.'),
    signalSchema: anyJson('JSON Schema (2020-12) of unaddressed signal payloads; `false` when none are accepted.'),
    waits: Type.Array(ref(WaitDeclaration), {
      description: 'The external waits the deployment declares, by key; waits shaped at run time carry their own schema (see `/v1/waits`).',
    }),
  },
  { $id: 'Deployment', description: 'One entry of the deployment catalog.' },
);

export const DeploymentList = closedObject({ items: Type.Array(ref(Deployment)) }, { $id: 'DeploymentList', description: 'The catalog.' });

export const DeploymentParams = closedObject({ name: qualifiedName('The deployment name.', 'demo.echo') });

export const deploymentComponents: readonly TSchema[] = [WaitDeclaration, Deployment, DeploymentList];
