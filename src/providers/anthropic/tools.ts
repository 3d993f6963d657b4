// OpenAI tools, tool_choice and response_format -> Anthropic tools and
// tool_choice.
//
// Structured output is emulated with one forced tool: its input_schema is the
// requested JSON schema, and the translators turn its input back into the
// message content, with finish_reason "stop". Claude fills a forced tool's
// input to the schema, and every Claude model supports it, where a prompt
// asking for JSON guarantees nothing. The tool's name is reserved, so a
// caller's tool can never be mistaken for it.
import { GatewayError } from '../../errors.js';
import { isObj } from '../json-shape.js';
import { checkNamedToolChoice, checkResponseFormat } from '../known-members.js';
import { cacheMark } from '../message-content.js';

type Json = Record<string, any>;

export const JSON_TOOL = 'sluice_json_response';

const refuse = (param: string, message: string): never => {
  throw new GatewayError('invalid_request', message, { param });
};

/**
 * The function keys a tool may carry. `strict` is accepted and dropped: the
 * SDKs' structured-output helpers always send it, and Claude fills a tool's
 * input to its input_schema without a strict switch (see docs/compatibility.md).
 * Any other key is refused rather than lost.
 */
const FUNCTION_KEYS = new Set(['name', 'description', 'parameters', 'strict']);

function tool(t: unknown, i: number): Json {
  const at = `tools.${i}`;
  if (!isObj(t) || t.type !== 'function' || !isObj(t.function) || typeof t.function.name !== 'string') {
    return refuse(`${at}.type`, `${at} must be a function tool; other tool types are not supported for Anthropic models.`);
  }
  for (const key of Object.keys(t.function)) {
    if (!FUNCTION_KEYS.has(key)) refuse(`${at}.function.${key}`, `${at}.function.${key} is not supported for Anthropic models.`);
  }
  for (const key of Object.keys(t)) {
    if (key !== 'type' && key !== 'function' && key !== 'cache_control') refuse(`${at}.${key}`, `${at}.${key} is not supported for Anthropic models.`);
  }
  if (t.function.name === JSON_TOOL) refuse(`${at}.function.name`, `${at}.function.name ${JSON.stringify(JSON_TOOL)} is reserved by the gateway.`);
  const params = t.function.parameters ?? { type: 'object', properties: {} };
  if (!isObj(params) || params.type !== 'object') refuse(`${at}.function.parameters`, `${at}.function.parameters must be a JSON schema of type object.`);
  const out: Json = { name: t.function.name, input_schema: params };
  if (typeof t.function.description === 'string') out.description = t.function.description;
  if (t.cache_control !== undefined) out.cache_control = cacheMark(t.cache_control, `${at}.cache_control`);
  return out;
}

function choice(tc: unknown): Json | undefined {
  if (tc === undefined || tc === null || tc === 'auto') return { type: 'auto' };
  if (tc === 'none') return { type: 'none' };
  if (tc === 'required') return { type: 'any' };
  if (isObj(tc) && tc.type === 'function' && isObj(tc.function) && typeof tc.function.name === 'string') {
    checkNamedToolChoice(tc, 'Anthropic');
    return { type: 'tool', name: tc.function.name };
  }
  return refuse('tool_choice', 'tool_choice must be "auto", "none", "required" or {type: "function", function: {name}}.');
}

/** The forced tool for structured output, or undefined when the answer is plain text. */
function jsonTool(format: unknown): Json | undefined {
  if (format === undefined || format === null) return undefined;
  if (!isObj(format)) return refuse('response_format', 'response_format must be an object.');
  checkResponseFormat(format, 'Anthropic');
  if (format.type === 'text') return undefined;
  if (format.type === 'json_object') {
    return { name: JSON_TOOL, description: 'Answer with one JSON object.', input_schema: { type: 'object', additionalProperties: true } };
  }
  if (format.type === 'json_schema') {
    const schema = format.json_schema?.schema;
    if (!isObj(schema) || schema.type !== 'object') refuse('response_format.json_schema.schema', 'response_format.json_schema.schema must be a JSON schema of type object for Anthropic models.');
    const description = typeof format.json_schema.description === 'string' ? format.json_schema.description : 'Answer with JSON matching this schema.';
    return { name: JSON_TOOL, description, input_schema: schema };
  }
  return refuse('response_format.type', `response_format ${JSON.stringify(format.type)} is not supported for Anthropic models.`);
}

/** The tools and tool_choice fields of the Anthropic body (absent when the caller sent neither). */
export function toolFields(raw: Record<string, unknown>, thinking: boolean): Json {
  const forced = jsonTool(raw.response_format);
  const tools = raw.tools;
  if (forced) {
    // One forced tool cannot also leave the model free to call the caller's.
    if (Array.isArray(tools) && tools.length > 0) refuse('response_format', 'response_format with tools is not supported for Anthropic models: structured output uses a forced tool.');
    if (thinking) refuse('response_format', 'response_format with reasoning_effort is not supported for Anthropic models: thinking cannot force a tool.');
    return { tools: [forced], tool_choice: { type: 'tool', name: JSON_TOOL } };
  }
  if (tools === undefined || tools === null || (Array.isArray(tools) && tools.length === 0)) {
    if (raw.tool_choice !== undefined && raw.tool_choice !== null && raw.tool_choice !== 'none' && raw.tool_choice !== 'auto') refuse('tool_choice', 'tool_choice needs tools.');
    return {};
  }
  if (!Array.isArray(tools)) return refuse('tools', 'tools must be an array.');
  const tc = choice(raw.tool_choice)!;
  if (thinking && (tc.type === 'any' || tc.type === 'tool')) {
    refuse('tool_choice', 'With reasoning_effort, Anthropic models accept only tool_choice "auto" or "none".');
  }
  if (raw.parallel_tool_calls === false && tc.type !== 'none') tc.disable_parallel_tool_use = true;
  return { tools: tools.map(tool), tool_choice: tc };
}
