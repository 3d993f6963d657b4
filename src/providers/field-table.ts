// What a translating adapter does with every top-level field of an OpenAI
// chat-completions request. Nothing is dropped by accident: a field is
// translated, dropped because dropping it cannot change the answer the caller
// relies on, or refused with a 400 naming it. A field missing from a table (a
// typo, or one OpenAI adds later) is refused too, until someone decides.
import { GatewayError } from '../errors.js';
import { ownEntry } from './json-shape.js';

export type Disposition = 'translated' | 'harmless' | 'refused';

export interface FieldRule {
  readonly disposition: Disposition;
  /** Why, in a few words (also the compatibility table's wording). */
  readonly note: string;
  /** For refused fields: values that ask for nothing beyond the provider's behaviour (the default, an empty list), and so pass. */
  readonly accepts?: (value: unknown) => boolean;
}

export type FieldTable = Readonly<Record<string, FieldRule>>;

export const isNullish = (v: unknown): boolean => v === null || v === undefined;
export const none = (v: unknown): boolean => isNullish(v) || v === false;
export const emptyObject = (v: unknown): boolean => isNullish(v) || (typeof v === 'object' && Object.keys(v as object).length === 0);
export const emptyList = (v: unknown): boolean => isNullish(v) || (Array.isArray(v) && v.length === 0);
export const zero = (v: unknown): boolean => isNullish(v) || v === 0;

/** Throws the 400 for the first field of `raw` that `table` refuses or does not know. */
export function checkFields(table: FieldTable, provider: string, raw: Readonly<Record<string, unknown>>): void {
  for (const field of Object.keys(raw)) {
    const rule = ownEntry(table, field);
    if (rule === undefined) {
      throw new GatewayError('invalid_request', `The field ${JSON.stringify(field)} is not supported for ${provider} models.`, { param: field });
    }
    if (rule.disposition === 'refused' && !rule.accepts?.(raw[field])) {
      throw new GatewayError('invalid_request', `${field} is not supported for ${provider} models: ${rule.note}.`, { param: field });
    }
  }
}
