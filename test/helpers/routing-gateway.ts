// The gateway the management-API and routing suites run against: routingConfig
// on a mock OpenAI upstream, and an admin key in each of its two organisations.
import { startOpenAIMock, OPENAI_MOCK_KEY, type OpenAIMock } from '../mocks/openai-mock.js';
import { startGateway, type TestGateway } from './gateway.js';
import { MGMT_UPSTREAM_ENV, routingConfig } from './management.js';

export interface RoutingGateway {
  mock: OpenAIMock;
  gw: TestGateway;
  /** Admin key of org `acme`. */
  admin: string;
  /** Admin key of org `beta`. */
  betaAdmin: string;
}

/** The caller closes `gw`, then `mock`. */
export async function startRoutingGateway(): Promise<RoutingGateway> {
  const mock = await startOpenAIMock();
  const gw = await startGateway({ config: routingConfig(mock.url), env: { [MGMT_UPSTREAM_ENV]: OPENAI_MOCK_KEY } });
  const admin = await gw.key('acme', 'admin');
  const betaAdmin = await gw.key('beta', 'admin');
  return { mock, gw, admin, betaAdmin };
}
