/** Upstream answers are untrusted JSON: every adapter checks shapes with this before reading fields. */
export const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null;

/**
 * `table[key]` for a key from a request or an answer: own entries only, so
 * that a name such as "constructor" or "__proto__" is unknown rather than
 * Object.prototype's member.
 */
export const ownEntry = <T>(table: Readonly<Record<string, T>>, key: string): T | undefined => (Object.hasOwn(table, key) ? table[key] : undefined);
