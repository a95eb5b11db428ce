/** `GET /v1/deployments`, `GET /v1/deployments/{name}` and `GET /v1/deployments/{name}/versions`. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { problemResponses } from '../problem-details.js';
import { NoQuery, ref, wire } from '../shared.js';
import { Deployment, DeploymentList, DeploymentParams, DeploymentVersionList } from './schemas.js';

export { deploymentComponents } from './schemas.js';

const deployments: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/deployments',
    {
      schema: {
        operationId: 'listDeployments',
        tags: ['deployments'],
        summary: 'The deployment catalog',
        querystring: NoQuery,
        response: { 200: { description: 'Every deployment this server can start.', ...ref(DeploymentList) }, ...problemResponses() },
      },
    },
    async () => ({ items: wire([...app.host.deployments()]) }),
  );

  app.get(
    '/v1/deployments/:name',
    {
      schema: {
        operationId: 'getDeployment',
        tags: ['deployments'],
        summary: 'One deployment',
        params: DeploymentParams,
        querystring: NoQuery,
        response: { 200: { description: 'The deployment.', ...ref(Deployment) }, ...problemResponses('deployment_not_found') },
      },
    },
    async (request) => wire(app.host.deployment(request.params.name)),
  );

  app.get(
    '/v1/deployments/:name/versions',
    {
      schema: {
        operationId: 'listDeploymentVersions',
        tags: ['deployments'],
        summary: 'The versions of one deployment and their live trees',
        description:
          'Every version (exact DeploymentRef) of the name this node registered, and any version live trees of the name still run, each with its live trees. ' +
          'Trees are counted from the stored heads, newest first and at most 1000 (`complete` says whether that reached the oldest).',
        params: DeploymentParams,
        querystring: NoQuery,
        response: { 200: { description: 'The versions.', ...ref(DeploymentVersionList) }, ...problemResponses('deployment_not_found') },
      },
    },
    async (request) => wire(await app.host.deploymentVersions(request.params.name)),
  );
};

export default deployments;
