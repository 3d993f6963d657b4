// Who may manage an organisation: admin keys only (every key made by the
// `sluice keys create` CLI, and API-made keys created with role admin). A user
// key authenticates fine and is then refused with 403 `forbidden`, so that a
// caller can tell "wrong key" from "key without the right".
import { GatewayError } from '../errors.js';
import type { GatewayRequest } from '../http/types.js';
import type { RequestContext } from '../pipeline/request-context.js';
import { authenticate, type Services } from '../pipeline/services.js';

/** What management writes must tell the rest of the gateway. */
export interface Management {
  /** Drops a revoked key from this instance's cache at once and from every other instance's. */
  keyRevoked(hash: Buffer): Promise<void>;
  /** Drops a key whose role changed from every cache, here and on every other instance, without revoking it. */
  keyChanged(hash: Buffer): Promise<void>;
  /** Recompiles this instance's rules now, so that its own writes apply before the next poll. */
  rulesChanged(): Promise<void>;
  /** Re-reads key limits now, here and in every other gateway thread, so a key's new limits apply before the next poll. */
  limitsChanged(): Promise<void>;
}

/** Authenticates and requires the admin role; returns the caller's organisation. */
export async function requireAdmin(svc: Services, ctx: RequestContext, req: GatewayRequest): Promise<string> {
  await authenticate(svc, ctx, req);
  if (ctx.key!.role !== 'admin') {
    throw new GatewayError('forbidden', 'This API key may only call the model endpoints; managing the organisation needs an admin key.');
  }
  return ctx.key!.organization_id;
}
