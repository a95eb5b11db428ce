/** The deployment catalog: what can be started, with its input, output and signal contracts. */
import { Type, type TSchema } from '@sinclair/typebox';
import { anyJson, closedObject, qualifiedName, ref } from '../shared.js';

export const Deployment = closedObject(
  {
    name: qualifiedName('The deployment name.', 'demo.echo'),
    description: Type.String(),
    deploymentRef: Type.String({ description: '`<name>+sha256:<hex>`: the exact behaviour and bindings.' }),
    inputSchema: anyJson('JSON Schema (2020-12) of the process input.'),
    outputSchema: anyJson('JSON Schema (2020-12) of the completed output.'),
    signalSchema: anyJson('JSON Schema (2020-12) of unaddressed signal payloads; `false` when none are accepted.'),
  },
  { $id: 'Deployment', description: 'One entry of the deployment catalog.' },
);

export const DeploymentList = closedObject({ items: Type.Array(ref(Deployment)) }, { $id: 'DeploymentList', description: 'The catalog.' });

export const DeploymentParams = closedObject({ name: qualifiedName('The deployment name.', 'demo.echo') });

export const deploymentComponents: readonly TSchema[] = [Deployment, DeploymentList];
