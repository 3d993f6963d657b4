// The upstream's own copy of a native response. With storing on, the native
// path lets the caller's `store` go upstream, so OpenAI keeps the response
// under the gateway's credential and its own id; a DELETE that removed only
// sluice's row answered `deleted: true` while the provider still held it.
// The delete goes to that provider first, and the row goes only once the
// upstream no longer holds the response (a 2xx, or a 404: already gone).
import type { ModelEntry } from '../domain.js';
import { GatewayError } from '../errors.js';
import type { GatewayResponse } from '../http/types.js';
import type { StoredResponse } from '../responses/store.js';
import { dispatchHeld } from './dispatch.js';
import type { RequestContext } from './request-context.js';
import type { Services } from './services.js';

/**
 * Deletes the upstream's copy of `row`, a native response. Throws, and so
 * keeps the row, when the upstream fails (its error, as any call's: 502,
 * 504, a 429 passed through) or cannot be reached as it was when it made the
 * response: the provider gone from the configuration, pointed at another
 * base URL, or without its credential. Deleting only the row then would
 * claim the response gone while the provider still holds it.
 */
export async function deleteHeldCopy(svc: Services, ctx: RequestContext, res: GatewayResponse, row: StoredResponse): Promise<void> {
  const provider = svc.config.providers.get(row.provider);
  // A row written before the base URL was kept has none: the provider's is the best guess there is.
  const moved = provider?.base_url !== undefined && row.upstream_base_url != null && provider.base_url !== row.upstream_base_url;
  if (!provider || provider.kind !== 'openai' || moved) {
    throw new GatewayError('conflict', `Response "${row.id}" is also stored by provider "${row.provider}", which ${provider ? 'now points at another upstream' : 'is no longer configured'}; its copy there cannot be deleted, so the response is kept. Configure the provider as it was, or let the response expire (responses.retention_days).`, { param: 'response_id' });
  }
  if (!svc.credentials.isConfigured(row.provider)) {
    throw new GatewayError('model_not_configured', `Response "${row.id}" is also stored by provider "${row.provider}", which has no credential mounted; its copy there cannot be deleted, so the response is kept.`, { param: 'response_id' });
  }
  // The chain reads an entry's provider and id only: the target, the retry policy and the circuit are the provider's.
  const entry: ModelEntry = { id: row.model ?? '', provider: row.provider, type: 'chat', aliases: [], context_window: 0, pricing: { prompt: 0, completion: 0 } };
  try {
    await dispatchHeld(svc, ctx, entry, res.signal, (t, s) => svc.upstream.deleteResponse(t, row.id, s));
  } catch (err) {
    // Already gone upstream (deleted there, or past the provider's own retention): only the row is left to delete.
    if (err instanceof GatewayError && err.code === 'upstream_error' && err.upstreamStatus === 404) return;
    throw err;
  }
}
