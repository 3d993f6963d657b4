// The Responses API as sluice reads it. Like the chat model, every object is
// open: a field nobody named here is still on the object and still reaches
// a native upstream or the caller.

export type Json = Record<string, unknown>;

/** One input or output item (`message`, `function_call`, `function_call_output`, `reasoning`, ...). */
export interface Item {
  type?: string;
  id?: string;
  [key: string]: unknown;
}

/** A validated `POST /v1/responses` body. */
export interface ResponsesRequest {
  model: string;
  /** The input as a list of items: a string input is one user message. */
  input: Item[];
  /** True when the caller sent `input` as a string (the native path sends it back as one). */
  inputWasString: boolean;
  instructions: string | undefined;
  stream: boolean;
  /** What the caller asked for (default true, as at OpenAI); the gateway's switches may still refuse to store. */
  store: boolean;
  previous_response_id: string | undefined;
  max_output_tokens: number | undefined;
  /** Every field the caller sent, for the native path and for echoing on the response object. */
  raw: Json;
  /** The body as the caller wrote it: the native path splices the few members it changes into this text. */
  text: string | undefined;
}

/** A `response` object, as sent to the caller and stored. */
export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  status: string;
  model: string;
  output: Item[];
  usage?: ResponseUsage | null;
  [key: string]: unknown;
}

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; [key: string]: unknown };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number; [key: string]: unknown };
  total_tokens: number;
  [key: string]: unknown;
}

export const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
