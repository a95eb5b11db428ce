/** `GET /v1/deployments` and `GET /v1/deployments/{name}`. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { problemResponses } from '../problem-details.js';
import { NoQuery, ref, wire } from '../shared.js';
import { Deployment, DeploymentList, DeploymentParams } from './schemas.js';

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
};

export default deployments;
