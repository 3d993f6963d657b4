// Character codes of JSON's structure, for the scanners that read JSON text by
// charCodeAt without parsing it (json-members.ts, openai-compatible/chunk-tail.ts).
export const QUOTE = 34;
export const COMMA = 44;
export const COLON = 58;
export const OPEN_BRACKET = 91;
export const BACKSLASH = 92;
export const CLOSE_BRACKET = 93;
export const OPEN_BRACE = 123;
export const CLOSE_BRACE = 125;
