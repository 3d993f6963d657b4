// The translating adapters read the caller's objects member by member: a
// member none of them reads is a 400 naming it, never lost on the way, and
// what the openai SDK's helpers add to the messages they hand back (its own
// parses) is dropped, so a tool loop can send its history on as it got it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChatMessage, ChatRequest, UpstreamTarget } from '../src/domain.js';
import { GatewayError } from '../src/errors.js';
import { anthropic } from '../src/providers/anthropic/index.js';
import { gemini } from '../src/providers/gemini/index.js';
import { chatFor } from './helpers/upstream-call.js';

const ADAPTERS = [
  { name: 'Anthropic', adapter: anthropic, chat: chatFor('claude-sonnet'), target: { provider: 'anthropic', kind: 'anthropic', baseUrl: 'http://anthropic.invalid/v1', model: 'claude-sonnet-4-20250514', apiKey: 'k' } },
  { name: 'Gemini', adapter: gemini, chat: chatFor('gemini-flash'), target: { provider: 'gemini', kind: 'gemini', baseUrl: 'http://gemini.invalid/v1beta', model: 'gemini-2.5-flash', apiKey: 'k' } },
] as const;

const user: ChatMessage = { role: 'user', content: 'Weather in Paris?' };
const weather = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } } };
const call = (extra: object = {}, fnExtra: object = {}) => ({ id: 'call_1', type: 'function' as const, function: { name: 'get_weather', arguments: '{"location":"Paris"}', ...fnExtra }, ...extra });
const loop = (assistant: Record<string, unknown>): ChatMessage[] => [user, { role: 'assistant', content: null, tool_calls: [call()], ...assistant }, { role: 'tool', tool_call_id: 'call_1', content: 'sunny' }];
const image = (extra: object) => [{ role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', ...extra } }] }] as ChatMessage[];
const schemaFormat = (extra: object = {}, schemaExtra: object = {}) => ({ type: 'json_schema', json_schema: { name: 'w', strict: true, schema: { type: 'object', properties: { a: { type: 'string' } } }, ...schemaExtra }, ...extra });

for (const { name, adapter, chat, target } of ADAPTERS) {
  const send = (req: ChatRequest) => JSON.parse(adapter.chatRequest(target as UpstreamTarget, req).body);
  const refused = (req: ChatRequest, param: string) => assert.throws(() => adapter.chatRequest(target as UpstreamTarget, req), (err: unknown) => {
    assert.ok(err instanceof GatewayError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.param, param);
    assert.match(err.message, new RegExp(`${param.replace(/\./g, '\\.')} is not supported for ${name} models`));
    return true;
  });

  describe(`${name}: members no translation reads`, () => {
    it('are refused by name, at every depth of a tool call, a tool_choice, a response_format and an image', () => {
      refused(chat(loop({ tool_calls: [call({ future_member: 1 })] })), 'messages.1.tool_calls.0.future_member');
      refused(chat(loop({ tool_calls: [call({}, { future_member: 'x' })] })), 'messages.1.tool_calls.0.function.future_member');
      refused(chat([user], { raw: { tools: [weather], tool_choice: { type: 'function', function: { name: 'get_weather' }, future_member: true } } }), 'tool_choice.future_member');
      refused(chat([user], { raw: { tools: [weather], tool_choice: { type: 'function', function: { name: 'get_weather', future_member: true } } } }), 'tool_choice.function.future_member');
      refused(chat([user], { raw: { response_format: schemaFormat({ future_member: 1 }) } }), 'response_format.future_member');
      refused(chat([user], { raw: { response_format: schemaFormat({}, { future_member: 1 }) } }), 'response_format.json_schema.future_member');
      refused(chat([user], { raw: { response_format: { type: 'json_object', future_member: 1 } } }), 'response_format.future_member');
      refused(chat(image({ future_member: 'x' })), 'messages.0.content.1.image_url.future_member');
    });

    it('what the openai SDK hands back is sent on: its parses, null members, an earlier answer\'s annotations, Google\'s extra_content', () => {
      const handedBack = loop({
        refusal: null, parsed: null, audio: null, annotations: [{ type: 'url_citation', url_citation: { url: 'https://example.com', title: 'x', start_index: 0, end_index: 1 } }],
        tool_calls: [call({ extra_content: { google: { thought_signature: 'c2ln' } } }, { parsed_arguments: { location: 'Paris' } })],
      });
      const sent = JSON.stringify(send(chat(handedBack, { raw: { tools: [weather] } })));
      for (const gone of ['parsed', 'annotations', 'example.com', 'audio']) assert.ok(!sent.includes(gone), `${gone} is not sent: ${sent}`);
      assert.ok(sent.includes('Paris') && sent.includes('sunny'), sent);
      // A structured answer's parse is dropped whatever it holds: the content it was read from is sent.
      assert.doesNotThrow(() => send(chat([user, { role: 'assistant', content: '{"a":"b"}', parsed: { a: 'b' } } as ChatMessage, { role: 'user', content: 'more' }])));
      // `detail` is a hint the model does without; a schema's own members are all read.
      assert.doesNotThrow(() => send(chat(image({ detail: 'high' }))));
      assert.doesNotThrow(() => send(chat([user], { raw: { response_format: schemaFormat({}, { description: 'd' }) } })));
    });
  });
}

describe('Gemini: media members no translation reads', () => {
  const chat = chatFor('gemini-flash');
  const target = ADAPTERS[1].target as UpstreamTarget;
  const refusedAt = (part: object, param: string) => assert.throws(
    () => gemini.chatRequest(target, chat([{ role: 'user', content: [part] } as ChatMessage])),
    (err: unknown) => err instanceof GatewayError && err.status === 400 && err.param === param,
  );
  it('are refused by name in audio and file parts; a file\'s name is read as what it is', () => {
    refusedAt({ type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav', future_member: 1 } }, 'messages.0.content.0.input_audio.future_member');
    refusedAt({ type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', future_member: 1 } }, 'messages.0.content.0.file.future_member');
    assert.doesNotThrow(() => gemini.chatRequest(target, chat([{ role: 'user', content: [{ type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } }] } as ChatMessage])));
  });
});
