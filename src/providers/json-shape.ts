/** Upstream answers are untrusted JSON: every adapter checks shapes with this before reading fields. */
export const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null;
