// The Gemini request translator as a pure function: OpenAI chat body in,
// Gemini body out, or a 400 naming the exact field it cannot carry.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChatMessage, ChatRequest, UpstreamTarget } from '../src/domain.js';
import { GatewayError } from '../src/errors.js';
import { gemini } from '../src/providers/gemini/index.js';
import { GEMINI_REQUEST_FIELDS } from '../src/providers/gemini/fields.js';
import { toGeminiSchema } from '../src/providers/gemini/schema.js';
import { chatFor } from './helpers/upstream-call.js';

const target: UpstreamTarget = { provider: 'gemini', kind: 'gemini', baseUrl: 'http://gemini.invalid/v1beta', model: 'gemini-2.5-flash', apiKey: 'k' };
const chat = chatFor('gemini-flash');
const user: ChatMessage = { role: 'user', content: 'hi' };
const body = (req: ChatRequest) => JSON.parse(gemini.chatRequest(target, req).body);

function refused(req: ChatRequest, param: string, message?: RegExp): void {
  assert.throws(() => gemini.chatRequest(target, req), (err: unknown) => {
    assert.ok(err instanceof GatewayError, String(err));
    assert.equal(err.code, 'invalid_request');
    assert.equal(err.status, 400);
    assert.equal(err.param, param);
    if (message) assert.match(err.message, message);
    return true;
  });
}

const weather = {
  type: 'function',
  function: {
    name: 'get_weather', description: 'Weather in a city', strict: true,
    parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'], additionalProperties: false, $schema: 'http://json-schema.org/draft-07/schema#' },
  },
};

describe('gemini request: tools', () => {
  it('declares functions with converted schemas and maps tool_choice', () => {
    const b = body(chat([user], { raw: { tools: [weather, { type: 'function', function: { name: 'now' } }], tool_choice: 'required' } }));
    assert.deepEqual(b.tools, [{ functionDeclarations: [
      { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'OBJECT', properties: { location: { type: 'STRING' } }, required: ['location'] } },
      { name: 'now' },
    ] }]);
    assert.deepEqual(b.toolConfig, { functionCallingConfig: { mode: 'ANY' } });
    const mode = (tool_choice: unknown) => body(chat([user], { raw: { tools: [weather], tool_choice } })).toolConfig;
    assert.deepEqual(mode('auto'), { functionCallingConfig: { mode: 'AUTO' } });
    assert.deepEqual(mode('none'), { functionCallingConfig: { mode: 'NONE' } });
    assert.deepEqual(mode({ type: 'function', function: { name: 'get_weather' } }), { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } });
    assert.deepEqual(mode({ type: 'allowed_tools', allowed_tools: { mode: 'required', tools: [{ type: 'function', function: { name: 'get_weather' } }] } }),
      { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } });
    assert.equal(mode(undefined), undefined);
    // An empty parameter object is no parameters: Gemini refuses OBJECT without properties.
    const empty = body(chat([user], { raw: { tools: [{ type: 'function', function: { name: 'ping', parameters: { type: 'object', properties: {} } } }] } }));
    assert.deepEqual(empty.tools[0].functionDeclarations[0], { name: 'ping' });
  });

  it('refuses tool settings Gemini cannot honour, naming them', () => {
    refused(chat([user], { raw: { tools: [weather], tool_choice: { type: 'function', function: { name: 'nope' } } } }), 'tool_choice.function.name');
    refused(chat([user], { raw: { tool_choice: 'required' } }), 'tool_choice');
    refused(chat([user], { raw: { tools: [weather], parallel_tool_calls: false } }), 'parallel_tool_calls', /Gemini/);
    refused(chat([user], { raw: { tools: [{ type: 'custom', custom: { name: 'x' } }] } }), 'tools.0.type');
    refused(chat([user], { raw: { tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} }, extra: 1 } }] } }), 'tools.0.function.extra');
    refused(chat([user], { raw: { tools: [weather], tool_choice: { type: 'allowed_tools', allowed_tools: { mode: 'auto', tools: [] } } } }), 'tool_choice.allowed_tools.mode');
    // Without tools, parallel_tool_calls: false asks for nothing.
    assert.equal(body(chat([user], { raw: { parallel_tool_calls: false } })).tools, undefined);
    assert.ok(body(chat([user], { raw: { tools: [weather], parallel_tool_calls: true } })).tools);
  });
});

describe('gemini request: schema conversion', () => {
  const path = 'tools.0.function.parameters';
  it('converts types, nullability, unions, enums, bounds and local references', () => {
    const schema = {
      type: 'object',
      $defs: { City: { type: 'object', properties: { name: { type: 'string', minLength: 1 } }, required: ['name'], additionalProperties: false } },
      properties: {
        note: { type: ['string', 'null'], description: 'free text' },
        unit: { type: 'string', enum: ['C', 'F'] },
        mood: { enum: ['happy', 'sad', null] },
        fixed: { const: 'x' },
        count: { type: 'integer', exclusiveMinimum: 0, maximum: 10 },
        ratio: { type: 'number', minimum: 0, maximum: 1, format: 'double' },
        when: { type: 'string', format: 'date-time' },
        tags: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3 },
        city: { $ref: '#/$defs/City', description: 'where' },
        either: { anyOf: [{ type: 'string' }, { type: 'number' }] },
        maybe: { anyOf: [{ $ref: '#/$defs/City' }, { type: 'null' }] },
        wrapped: { allOf: [{ $ref: '#/$defs/City' }] },
        mixed: { type: ['string', 'integer'] },
      },
      required: ['unit'],
      additionalProperties: false,
    };
    const city = { type: 'OBJECT', properties: { name: { type: 'STRING', minLength: 1 } }, required: ['name'] };
    assert.deepEqual(toGeminiSchema(schema, path), {
      type: 'OBJECT',
      properties: {
        note: { type: 'STRING', description: 'free text', nullable: true },
        unit: { type: 'STRING', enum: ['C', 'F'] },
        mood: { enum: ['happy', 'sad'], type: 'STRING', nullable: true },
        fixed: { enum: ['x'], type: 'STRING' },
        count: { type: 'INTEGER', minimum: 1, maximum: 10 },
        ratio: { type: 'NUMBER', minimum: 0, maximum: 1, format: 'double' },
        when: { type: 'STRING', format: 'date-time' },
        tags: { type: 'ARRAY', items: { type: 'STRING' }, minItems: 1, maxItems: 3 },
        city: { ...city, description: 'where' },
        either: { anyOf: [{ type: 'STRING' }, { type: 'NUMBER' }] },
        maybe: { ...city, nullable: true },
        wrapped: city,
        mixed: { anyOf: [{ type: 'STRING' }, { type: 'INTEGER' }] },
      },
      required: ['unit'],
    });
  });

  it('refuses what the subset cannot express, naming the exact keyword', () => {
    const refuse = (schema: unknown, param: string) => refused(chat([user], { raw: { tools: [{ type: 'function', function: { name: 'f', parameters: schema } }] } }), param, /Gemini/);
    const obj = (props: Record<string, unknown>) => ({ type: 'object', properties: props });
    refuse(obj({ x: { type: 'object', patternProperties: { '^a': { type: 'string' } } } }), `${path}.properties.x.patternProperties`);
    refuse(obj({ x: { type: 'array', items: [{ type: 'string' }, { type: 'number' }] } }), `${path}.properties.x.items`);
    refuse(obj({ x: { type: 'array', prefixItems: [{ type: 'string' }] } }), `${path}.properties.x.prefixItems`);
    refuse(obj({ x: { type: 'object', additionalProperties: { type: 'string' } } }), `${path}.properties.x.additionalProperties`);
    refuse(obj({ x: { type: 'string', format: 'email' } }), `${path}.properties.x.format`);
    refuse(obj({ x: { type: 'number', exclusiveMinimum: 0 } }), `${path}.properties.x.exclusiveMinimum`);
    refuse(obj({ x: { type: 'integer', enum: [1, 2] } }), `${path}.properties.x.enum`);
    refuse(obj({ x: { oneOf: [{ type: 'string' }, { type: 'number' }] } }), `${path}.properties.x.oneOf`);
    refuse(obj({ x: {} }), `${path}.properties.x`);
    refuse(obj({ x: { $ref: 'https://example.com/s.json' } }), `${path}.properties.x.$ref`);
    // Names an object's prototype has are unknown types, not the table's entries.
    refuse(obj({ x: { type: 'constructor' } }), `${path}.properties.x.type`);
    refuse(obj({ x: { type: '__proto__' } }), `${path}.properties.x.type`);
    // A tree refers to itself: recursion cannot be inlined.
    refuse({ type: 'object', $defs: { Node: { type: 'object', properties: { kids: { type: 'array', items: { $ref: '#/$defs/Node' } } } } }, properties: { root: { $ref: '#/$defs/Node' } } },
      `${path}.properties.root.$ref.properties.kids.items.$ref`);
    // A malformed escape in a reference is the caller's error, not the gateway's.
    refuse(obj({ a: { $ref: '#/$defs/%ZZ' } }), `${path}.properties.a.$ref`);
  });

  it('bounds what inlining references may build: definitions that each refer to the next twice would expand to 2^n schemas', () => {
    const fanOut = (n: number) => {
      const defs: Record<string, unknown> = {};
      for (let i = 0; i < n; i++) defs[`d${i}`] = { type: 'object', properties: { a: { $ref: `#/$defs/d${i + 1}` }, b: { $ref: `#/$defs/d${i + 1}` } } };
      defs[`d${n}`] = { type: 'string' };
      return { $ref: '#/$defs/d0', $defs: defs };
    };
    // Eight levels: 511 schemas, translated.
    assert.equal(toGeminiSchema(fanOut(8), 'p').properties.a.properties.b.type, 'OBJECT');
    const started = process.hrtime.bigint();
    assert.throws(() => toGeminiSchema(fanOut(20), 'p'), (err: any) => err.code === 'invalid_request' && /more than 5000 schemas/.test(err.message));
    assert.ok(Number(process.hrtime.bigint() - started) < 2e9, 'refused early, not after building the expansion');
    // Depth alone is bounded too.
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 100; i++) deep = { type: 'array', items: deep };
    assert.throws(() => toGeminiSchema(deep, 'p'), /nests more than 64 deep/);
  });
});

describe('gemini request: messages', () => {
  it('translates tool calls, tool results by tool_call_id, media and system text', () => {
    const b = body(chat([
      { role: 'system', content: 'sys' },
      { role: 'developer', content: [{ type: 'text', text: 'dev' }] },
      { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'high' } },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.JPG?size=2' } }, { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
        { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } }] },
      { role: 'assistant', content: 'calling', reasoning: 'an earlier turn\'s reasoning, as vLLM spells it', tool_calls: [
        { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' }, extra_content: { google: { thought_signature: 'sig==' } } },
        { id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '' } },
      ] },
      { role: 'tool', tool_call_id: 'call_b', content: 'noon' },
      { role: 'tool', tool_call_id: 'call_a', content: [{ type: 'text', text: '{"temp":' }, { type: 'text', text: '21}' }] },
      { role: 'user', content: 'thanks', name: 'ann' },
    ]));
    assert.deepEqual(b.systemInstruction, { parts: [{ text: 'sys' }, { text: 'dev' }] });
    assert.deepEqual(b.contents, [
      { role: 'user', parts: [{ text: 'look' }, { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } },
        { fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/cat.JPG?size=2' } }, { inlineData: { mimeType: 'audio/wav', data: 'UklGRg==' } },
        { inlineData: { mimeType: 'application/pdf', data: 'JVBERi0=' } }] },
      { role: 'model', parts: [{ text: 'calling' }, { functionCall: { id: 'call_a', name: 'get_weather', args: { location: 'Paris' } }, thoughtSignature: 'sig==' },
        { functionCall: { id: 'call_b', name: 'get_time', args: {} } }] },
      // In call order, though call_b was answered first.
      { role: 'user', parts: [{ functionResponse: { id: 'call_a', name: 'get_weather', response: { temp: 21 } } },
        { functionResponse: { id: 'call_b', name: 'get_time', response: { content: 'noon' } } }, { text: 'thanks' }] },
    ]);
  });

  it('an id sluice derived (Gemini gave none) is not sent; answers still go in call order, per assistant turn', () => {
    const derived = (n: number) => `call_${String(n).repeat(22)}`;
    const call = (id: string, name: string) => ({ id, type: 'function' as const, function: { name, arguments: '{}' } });
    const b = body(chat([
      user,
      { role: 'assistant', content: null, tool_calls: [call(derived(1), 'one'), call(derived(2), 'two'), call(derived(3), 'three')] },
      { role: 'tool', tool_call_id: derived(3), content: 'c' },
      { role: 'tool', tool_call_id: derived(1), content: 'a' },
      { role: 'tool', tool_call_id: derived(2), content: 'b' },
      { role: 'assistant', content: null, tool_calls: [call(derived(4), 'four'), call(derived(5), 'five')] },
      { role: 'tool', tool_call_id: derived(5), content: 'e' },
      { role: 'user', content: 'and?' },
      { role: 'tool', tool_call_id: derived(4), content: 'd' },
    ]));
    const answer = (name: string, content: string) => ({ functionResponse: { name, response: { content } } });
    assert.deepEqual(b.contents.slice(1), [
      { role: 'model', parts: [{ functionCall: { name: 'one', args: {} } }, { functionCall: { name: 'two', args: {} } }, { functionCall: { name: 'three', args: {} } }] },
      { role: 'user', parts: [answer('one', 'a'), answer('two', 'b'), answer('three', 'c')] },
      { role: 'model', parts: [{ functionCall: { name: 'four', args: {} } }, { functionCall: { name: 'five', args: {} } }] },
      // A text between two answers keeps its place: only answers standing together are put in order.
      { role: 'user', parts: [answer('five', 'e'), { text: 'and?' }, answer('four', 'd')] },
    ]);
  });

  it('translates req.messages (after DLP), never raw.messages', () => {
    const req = chat([{ role: 'user', content: 'my card is [REDACTED]' }]);
    req.raw.messages = [{ role: 'user', content: 'my card is 4111 1111 1111 1111' }];
    assert.doesNotMatch(gemini.chatRequest(target, req).body, /4111/);
  });

  it('refuses what it cannot carry, naming the message, part or field', () => {
    const call = { id: 'c1', type: 'function' as const, function: { name: 'f', arguments: '{"a":1}' } };
    refused(chat([{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'input_video', video: {} }] }]), 'messages.0.content.1.type', /Gemini/);
    refused(chat([{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/picture' } }] }]), 'messages.0.content.0.image_url.url');
    refused(chat([{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.constructor' } }] }]), 'messages.0.content.0.image_url.url');
    refused(chat([{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.__proto__' } }] }]), 'messages.0.content.0.image_url.url');
    refused(chat([{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-abc' } }] }]), 'messages.0.content.0.file');
    refused(chat([user, { role: 'assistant', content: null, tool_calls: [{ ...call, function: { name: 'f', arguments: '{oops' } }] }]), 'messages.1.tool_calls.0.function.arguments');
    refused(chat([user, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: 'other', content: 'x' }]), 'messages.2.tool_call_id');
    refused(chat([user, { role: 'function', name: 'f', content: 'x' }]), 'messages.1.role');
    refused(chat([{ role: 'user', content: 'a', audio: { id: 'x' } }]), 'messages.0.audio');
    refused(chat([{ role: 'system', content: 'alone' }]), 'messages');
    refused(chat([{ role: 'system', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AA==' } }] }, user]), 'messages.0.content.0.type');
  });
});

describe('gemini request: generation config and the field table', () => {
  it('maps n, max_completion_tokens, response formats and reasoning effort', () => {
    const g = (fields: Partial<ChatRequest>) => body(chat([user], fields)).generationConfig;
    assert.deepEqual(g({ n: 2, max_tokens: 50, raw: { max_completion_tokens: 50 } }), { maxOutputTokens: 50, candidateCount: 2 });
    assert.deepEqual(g({ raw: { response_format: { type: 'json_object' } } }), { responseMimeType: 'application/json' });
    assert.equal(g({ raw: { response_format: { type: 'text' } } }), undefined);
    assert.deepEqual(g({ raw: { response_format: { type: 'json_schema', json_schema: { name: 'x', strict: true, schema: {
      type: 'object', properties: { b: { type: 'string' }, a: { type: 'object', properties: { z: { type: 'integer' }, y: { type: 'boolean' } } } }, required: ['b', 'a'], additionalProperties: false,
    } } } } }), { responseMimeType: 'application/json', responseSchema: {
      type: 'OBJECT', properties: { b: { type: 'STRING' }, a: { type: 'OBJECT', properties: { z: { type: 'INTEGER' }, y: { type: 'BOOLEAN' } }, propertyOrdering: ['z', 'y'] } },
      required: ['b', 'a'], propertyOrdering: ['b', 'a'],
    } });
    assert.deepEqual(g({ raw: { reasoning_effort: 'low' } }), { thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } });
    assert.deepEqual(g({ raw: { reasoning_effort: 'high' } }), { thinkingConfig: { thinkingBudget: 24576, includeThoughts: true } });
    assert.deepEqual(g({ raw: { reasoning_effort: 'none' } }), { thinkingConfig: { thinkingBudget: 0 } });
    refused(chat([user], { raw: { reasoning_effort: 'extreme' } }), 'reasoning_effort');
    refused(chat([user], { raw: { reasoning_effort: 'constructor' } }), 'reasoning_effort');
    refused(chat([user], { raw: { reasoning_effort: '__proto__' } }), 'reasoning_effort');
    refused(chat([user], { raw: { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { m: { type: 'object', additionalProperties: { type: 'number' } } } } } } } }),
      'response_format.json_schema.schema.properties.m.additionalProperties');
    refused(chat([user], { raw: { response_format: { type: 'grammar' } } }), 'response_format.type');
  });

  it('lists every OpenAI request field with a disposition', () => {
    const openai = ['model', 'messages', 'stream', 'stream_options', 'temperature', 'top_p', 'n', 'stop', 'max_tokens', 'max_completion_tokens',
      'presence_penalty', 'frequency_penalty', 'logit_bias', 'logprobs', 'top_logprobs', 'user', 'seed', 'tools', 'tool_choice', 'parallel_tool_calls',
      'functions', 'function_call', 'response_format', 'reasoning_effort', 'service_tier', 'store', 'metadata', 'modalities', 'audio', 'prediction',
      'web_search_options', 'prompt_cache_key', 'safety_identifier', 'verbosity'];
    for (const f of openai) assert.ok(GEMINI_REQUEST_FIELDS[f], `${f} has a disposition`);
    for (const [f, rule] of Object.entries(GEMINI_REQUEST_FIELDS)) {
      assert.ok(['translated', 'harmless', 'refused'].includes(rule.disposition), f);
      assert.ok(rule.note.length > 0, f);
    }
  });

  it('refuses each refused field naming it and Gemini, passes harmless ones and default values, and refuses unknown fields', () => {
    const refusals: Record<string, unknown> = {
      logit_bias: { 50256: -100 }, logprobs: true, top_logprobs: 3, functions: [{ name: 'f' }], function_call: 'auto', service_tier: 'flex',
      modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' }, web_search_options: {}, verbosity: 'low',
    };
    for (const [field, value] of Object.entries(refusals)) refused(chat([user], { raw: { [field]: value } }), field, /Gemini/);
    for (const [field, rule] of Object.entries(GEMINI_REQUEST_FIELDS)) if (rule.disposition === 'refused') assert.ok(field in refusals, `${field} is tested`);
    refused(chat([user], { raw: { top_k: 40 } }), 'top_k', /Gemini/);
    // Names an object's prototype has are fields like any other, not the table's rules.
    refused(chat([user], { raw: JSON.parse('{"__proto__":{"a":1}}') }), '__proto__', /Gemini/);
    refused(chat([user], { raw: { constructor: 'x', toString: 1 } }), 'constructor', /Gemini/);
    const harmless = { stream_options: { include_usage: true }, user: 'u', safety_identifier: 's', prompt_cache_key: 'k', store: true, metadata: { a: 'b' },
      prediction: { type: 'content', content: 'x' }, logprobs: false, top_logprobs: 0, logit_bias: {}, service_tier: 'auto', modalities: ['text'], verbosity: 'medium',
      audio: null, functions: [], web_search_options: null, prompt_cache_retention: 'in_memory' };
    const b = body(chat([user], { raw: harmless }));
    assert.deepEqual(Object.keys(b), ['contents']);
  });
});

describe('gemini prompt-cache marks and part members', () => {
  it('checks a cache_control mark and leaves it out (Gemini caches prefixes by itself); refuses any other part or tool member', () => {
    const mark = { type: 'ephemeral' };
    const b = body(chat([
      { role: 'system', content: [{ type: 'text', text: 'Stable.', cache_control: mark }] },
      { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: mark }] },
    ], { raw: { tools: [{ ...weather, cache_control: mark }] } }));
    assert.deepEqual(b.systemInstruction, { parts: [{ text: 'Stable.' }] });
    assert.deepEqual(b.contents, [{ role: 'user', parts: [{ text: 'hi' }] }]);
    assert.doesNotMatch(JSON.stringify(b), /cache_control|ephemeral/);
    refused(chat([{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'x' } }] }]), 'messages.0.content.0.cache_control');
    refused(chat([{ role: 'user', content: [{ type: 'text', text: 'hi', citations: true }] }]), 'messages.0.content.0.citations');
    refused(chat([user], { raw: { tools: [{ ...weather, defer_loading: true }] } }), 'tools.0.defer_loading');
    refused(chat([user], { raw: { tools: [{ ...weather, cache_control: 'ephemeral' }] } }), 'tools.0.cache_control');
  });
});
