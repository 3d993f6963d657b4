// OpenAI `tools`, `tool_choice` and `parallel_tool_calls` -> Gemini
// `tools: [{functionDeclarations}]` and `toolConfig.functionCallingConfig`.
import { GatewayError } from '../../errors.js';
import { isObj } from '../json-shape.js';
import { checkNamedToolChoice } from '../known-members.js';
import { cacheMark } from '../message-content.js';
import { toGeminiSchema } from './schema.js';

type Json = Record<string, any>;

const refuse = (param: string, message: string): never => {
  throw new GatewayError('invalid_request', message, { param });
};

const FUNCTION_KEYS = new Set(['name', 'description', 'parameters', 'strict']);

function declaration(tool: unknown, i: number): Json {
  const at = `tools.${i}`;
  if (!isObj(tool)) return refuse(at, `${at} must be an object.`);
  if (tool.type !== 'function') return refuse(`${at}.type`, `Tools of type ${JSON.stringify(tool.type)} are not supported for Gemini models; only "function".`);
  const fn = tool.function;
  if (!isObj(fn) || typeof fn.name !== 'string' || !fn.name) return refuse(`${at}.function.name`, `${at}.function.name is required.`);
  for (const key of Object.keys(fn)) {
    if (!FUNCTION_KEYS.has(key)) refuse(`${at}.function.${key}`, `${at}.function.${key} is not supported for Gemini models.`);
  }
  // A prompt-cache mark is checked and left out: Gemini caches repeated prefixes by itself (message-content.ts).
  for (const key of Object.keys(tool)) {
    if (key === 'cache_control') cacheMark(tool.cache_control, `${at}.cache_control`);
    else if (key !== 'type' && key !== 'function') refuse(`${at}.${key}`, `${at}.${key} is not supported for Gemini models.`);
  }
  const out: Json = { name: fn.name };
  if (typeof fn.description === 'string') out.description = fn.description;
  if (fn.parameters != null) {
    const params = toGeminiSchema(fn.parameters, `${at}.function.parameters`);
    // Gemini refuses an OBJECT with no properties; a function without arguments simply declares none.
    const empty = params.type === 'OBJECT' && (!params.properties || Object.keys(params.properties).length === 0);
    if (!empty) out.parameters = params;
  }
  return out;
}

/** The caller's functions as one Gemini tool; undefined when there are none. */
export function toolDeclarations(raw: Json): Json[] | undefined {
  if (raw.tools == null) return undefined;
  if (!Array.isArray(raw.tools)) return refuse('tools', 'tools must be an array.');
  if (raw.tools.length === 0) return undefined;
  return [{ functionDeclarations: raw.tools.map(declaration) }];
}

function namedChoice(name: unknown, param: string, declared: Set<string>): Json {
  if (typeof name !== 'string' || !declared.has(name)) refuse(param, `${param} must name one of the functions in tools.`);
  return { mode: 'ANY', allowedFunctionNames: [name] };
}

/**
 * auto -> AUTO, none -> NONE, required -> ANY, a named function -> ANY limited
 * to it. Without tools, auto and none change nothing; asking for a call does.
 */
export function toolConfig(raw: Json, tools: Json[] | undefined): Json | undefined {
  const choice = raw.tool_choice;
  const declared = new Set<string>((tools?.[0]?.functionDeclarations ?? []).map((d: Json) => d.name));
  // Without tools it is meaningless: there is nothing to run in parallel. With tools, Gemini may
  // answer with several calls in one turn and has no switch to stop it; a caller that can run only one would break.
  if (tools && raw.parallel_tool_calls === false) {
    refuse('parallel_tool_calls', 'parallel_tool_calls: false cannot be enforced for Gemini models, which may call several functions in one turn. Leave it out, or send true.');
  }
  if (choice == null) return undefined;
  if (!tools) {
    if (choice === 'auto' || choice === 'none') return undefined;
    return refuse('tool_choice', 'tool_choice asks for a function call, but the request has no tools.');
  }
  let config: Json;
  if (choice === 'auto') config = { mode: 'AUTO' };
  else if (choice === 'none') config = { mode: 'NONE' };
  else if (choice === 'required') config = { mode: 'ANY' };
  else if (isObj(choice) && choice.type === 'function') {
    checkNamedToolChoice(choice, 'Gemini');
    config = namedChoice(choice.function?.name, 'tool_choice.function.name', declared);
  }
  else if (isObj(choice) && choice.type === 'allowed_tools' && isObj(choice.allowed_tools)) {
    const { mode, tools: allowed } = choice.allowed_tools;
    // Gemini limits the functions only while a call is forced (ANY); "auto" over a subset has no equivalent.
    if (mode !== 'required') return refuse('tool_choice.allowed_tools.mode', 'tool_choice allowed_tools with mode "auto" is not supported for Gemini models; use "required".');
    if (!Array.isArray(allowed) || allowed.length === 0) return refuse('tool_choice.allowed_tools.tools', 'tool_choice.allowed_tools.tools must list functions.');
    const names = allowed.map((t: any, i: number) => namedChoice(t?.function?.name, `tool_choice.allowed_tools.tools.${i}.function.name`, declared).allowedFunctionNames[0]);
    config = { mode: 'ANY', allowedFunctionNames: names };
  } else return refuse('tool_choice', `tool_choice ${JSON.stringify(choice)} is not supported for Gemini models.`);
  return { functionCallingConfig: config };
}
