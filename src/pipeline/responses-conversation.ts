// The conversation a Responses request continues, read from the store: the
// chain behind previous_response_id (each response's input items, then its
// output), and the items an `item_reference` names. These reads are the only
// database reads on the request path, and happen only when asked for.
import { GatewayError } from '../errors.js';
import type { StoredResponse } from '../responses/store.js';
import type { Item } from '../responses/types.js';
import type { Services } from './services.js';

export async function loadChain(svc: Services, org: string, id: string): Promise<StoredResponse[]> {
  const chain = await svc.responses.chain(org, id);
  if (!chain) {
    throw new GatewayError('not_found', `No stored response "${id}" (or part of its conversation) for this organisation: it was never stored, was deleted, or has expired.`, { param: 'previous_response_id' });
  }
  return chain;
}

/** Every item of the conversation, oldest first. */
export const chainItems = (chain: readonly StoredResponse[]): Item[] => chain.flatMap((r) => [...r.input, ...r.response.output]);

/** The input with every `item_reference` replaced by the stored item it names, and where each came from. */
export interface ResolvedInput {
  /** The caller's array itself when it holds no reference. */
  items: Item[];
  /** By position in `items`: the stored response each resolved item was read from. */
  refs: Map<number, StoredResponse>;
}

/**
 * Resolves every `item_reference` against this organisation's stored
 * responses, on either path, before anything reads the input: an unknown id
 * is a 404. The native path used to send references on unchecked, and the
 * upstream holds every organisation's items under the gateway's one
 * credential (until 2026-11-29); what a reference names is prompt too, read
 * by DLP, the shield and the estimate like the rest of the input.
 */
export async function resolveReferences(svc: Services, org: string, items: Item[]): Promise<ResolvedInput> {
  const refs = new Map<number, StoredResponse>();
  if (!items.some((it) => it.type === 'item_reference')) return { items, refs };
  // A reference that names nothing is a malformed request (400), not a missing item (404).
  items.forEach((it, i) => {
    if (it.type === 'item_reference' && (typeof it.id !== 'string' || it.id === '')) {
      throw new GatewayError('invalid_request', `input.${i}.id must be the id of a stored item.`, { param: `input.${i}.id` });
    }
  });
  const named = items.flatMap((it) => (it.type === 'item_reference' && typeof it.id === 'string' ? [it.id] : []));
  const stored = await svc.responses.findItems(org, named);
  const out: Item[] = [];
  for (const [i, it] of items.entries()) {
    if (it.type !== 'item_reference') { out.push(it); continue; }
    const found = typeof it.id === 'string' ? stored.get(it.id) : undefined;
    if (!found) throw new GatewayError('not_found', `No stored item "${String(it.id)}" for this organisation.`, { param: `input.${i}.id` });
    refs.set(i, found.row);
    out.push(found.item);
  }
  return { items: out, refs };
}
