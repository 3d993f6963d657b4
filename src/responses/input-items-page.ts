// GET /v1/responses/{id}/input_items as OpenAI answers it: a page of the
// stored input items in the shape OpenAI lists them, each with an id, and
// the cursor the SDK's auto-pagination follows (the last item's id as
// `after`, until has_more is false).
import { createHash } from 'node:crypto';
import { GatewayError } from '../errors.js';
import type { Item } from './types.js';

export interface PageQuery {
  limit: number;
  order: 'asc' | 'desc';
  after: string | undefined;
}

export interface ItemsPage {
  object: 'list';
  data: Item[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

const MAX_LIMIT = 100;

/**
 * The query, checked: `limit` an integer from 1 to 100 (20), `order` asc or
 * desc (desc, as OpenAI's default), `after` an item id. `include` (OpenAI's
 * `include[]`) is accepted and needs nothing: the stored items are whole, so
 * what it asks for (an input image's URL, say) is already in them.
 */
export function readPageQuery(query: string): PageQuery {
  const q = new URLSearchParams(query);
  const rawLimit = q.get('limit');
  let limit = 20;
  if (rawLimit !== null) {
    limit = /^[0-9]{1,3}$/.test(rawLimit) ? Number(rawLimit) : NaN;
    if (!(limit >= 1 && limit <= MAX_LIMIT)) throw new GatewayError('invalid_request', `limit must be an integer from 1 to ${MAX_LIMIT}.`, { param: 'limit' });
  }
  const order = q.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw new GatewayError('invalid_request', 'order must be "asc" or "desc".', { param: 'order' });
  return { limit, order, after: q.get('after') ?? undefined };
}

/** OpenAI's prefix for an item id, by its type; `item` for a type sluice has no prefix for. */
const PREFIXES: Readonly<Record<string, string>> = { message: 'msg', function_call: 'fc', function_call_output: 'fco', reasoning: 'rs' };

/**
 * An id for an item sent without one: its response's id and its position,
 * hashed, so that every call on every instance lists the same id (the SDK's
 * next page names it as `after`), with no write and no migration of rows.
 */
function derivedId(responseId: string, index: number, type: unknown): string {
  const prefix = (typeof type === 'string' ? PREFIXES[type] : undefined) ?? 'item';
  return `${prefix}_${createHash('sha256').update(`${responseId}\n${index}`).digest('hex').slice(0, 48)}`;
}

/** The types whose listed items OpenAI gives a status; a stored input item has always completed. */
const WITH_STATUS = new Set(['message', 'function_call', 'function_call_output']);

/**
 * An input item as OpenAI lists it: with an id (its own, else derived) and a
 * status, and a message's string content as the one part OpenAI makes of it
 * (`input_text`; `output_text` for an assistant's turn).
 */
function listed(item: Item, id: string): Item {
  const out: Item = { id, ...item };
  // A caller's id an earlier item has is listed under the derived one (inputItemsPage).
  out.id = id;
  if (typeof item.type === 'string' && WITH_STATUS.has(item.type) && item.status === undefined) out.status = 'completed';
  if (item.type === 'message' && typeof item.content === 'string') {
    out.content = [item.role === 'assistant' ? { type: 'output_text', text: item.content, annotations: [] } : { type: 'input_text', text: item.content }];
  }
  return out;
}

/**
 * The page of `input` (a stored response's items, oldest first) that `query`
 * asks for. An id a caller sent is kept, unless an earlier item has it (two
 * item_references to one item): the later one is listed under a derived id,
 * since a cursor that named two items would send the SDK's next page back to
 * the first and never end.
 */
export function inputItemsPage(responseId: string, input: readonly Item[], query: PageQuery): ItemsPage {
  const seen = new Set<string>();
  const all = input.map((item, i) => {
    const own = typeof item.id === 'string' && item.id !== '' && !seen.has(item.id) ? item.id : undefined;
    const id = own ?? derivedId(responseId, i, item.type);
    seen.add(id);
    return listed(item, id);
  });
  if (query.order === 'desc') all.reverse();
  let start = 0;
  if (query.after !== undefined) {
    start = all.findIndex((it) => it.id === query.after) + 1;
    if (start === 0) throw new GatewayError('invalid_request', `after names no input item of response "${responseId}".`, { param: 'after' });
  }
  const data = all.slice(start, start + query.limit);
  return {
    object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: start + query.limit < all.length,
  };
}
