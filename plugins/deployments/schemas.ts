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

export const DeploymentVersion = closedObject(
  {
    deploymentRef: Type.String({ description: '`<name>+sha256:<hex>`: the exact version.' }),
    name: Type.String(),
    contractDigest: Type.String(),
    implementationDigest: Type.String(),
    configurationDigest: Type.String(),
    bindingsDigest: Type.String(),
    current: Type.Boolean({ description: 'The version new starts use.' }),
    registeredHere: Type.Boolean({ description: 'This node holds the version (false: only live trees of it were found).' }),
    restoreDecider: Type.Boolean({ description: 'The version exports a restoreDecider: drifted trees of the name may move on to it.' }),
    liveTrees: Type.Integer({ minimum: 0, description: 'Live (not terminal) trees of this version among those scanned.' }),
    liveRootIds: Type.Array(Type.String(), { maxItems: 20, description: 'Up to 20 of their root ids, newest first.' }),
  },
  { $id: 'DeploymentVersion', description: 'One version (an exact DeploymentRef) of a deployment.' },
);

export const DeploymentVersionList = closedObject(
  {
    name: Type.String(),
    versions: Type.Array(ref(DeploymentVersion), { description: 'Versions registered here in registration order, then versions only live trees run.' }),
    treesScanned: Type.Integer({ minimum: 0, description: 'Trees of the name read, newest first (at most 1000).' }),
    complete: Type.Boolean({ description: 'False when the bound stopped the scan: older trees were not counted.' }),
  },
  { $id: 'DeploymentVersionList', description: 'The versions of one deployment and their live trees.' },
);

export const DeploymentParams = closedObject({ name: qualifiedName('The deployment name.', 'demo.echo') });

export const deploymentComponents: readonly TSchema[] = [WaitDeclaration, Deployment, DeploymentList, DeploymentVersion, DeploymentVersionList];
