// The conversation a Responses request continues, read from the store: the
// chain behind previous_response_id (each response's input items, then its
// output), and the items an `item_reference` names. These reads are the only
// database reads on the request path, and happen only when asked for.
import { GatewayError } from '../errors.js';
import { responseIdOfItem } from '../responses/chat-to-response.js';
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

/** The items with every `item_reference` replaced by the stored item it names (this organisation's only). */
export async function resolveReferences(svc: Services, org: string, items: Item[]): Promise<Item[]> {
  if (!items.some((it) => it.type === 'item_reference')) return items;
  const byResponse = new Map<string, Promise<Item[]>>();
  const out: Item[] = [];
  for (const [i, it] of items.entries()) {
    if (it.type !== 'item_reference') { out.push(it); continue; }
    const respId = typeof it.id === 'string' ? responseIdOfItem(it.id) : undefined;
    let found: Item | undefined;
    if (respId) {
      if (!byResponse.has(respId)) byResponse.set(respId, svc.responses.get(org, respId).then((r) => (r ? [...r.input, ...r.response.output] : [])));
      found = (await byResponse.get(respId)!).find((x) => x.id === it.id);
    }
    if (!found) throw new GatewayError('not_found', `No stored item "${String(it.id)}" for this organisation.`, { param: `input.${i}.id` });
    out.push(found);
  }
  return out;
}
