// A chat chunk stream -> the typed Responses events, in the order the real
// API sends them: response.created and .in_progress; per output item
// .output_item.added, its parts and deltas, their .done events and
// .output_item.done; then response.completed (or .incomplete) carrying the
// whole response. Every event has its sequence_number. Only choice 0 is read:
// a Responses request never asks for more.
import type { ChatChunk, Usage } from '../domain.js';
import { callIndex } from '../pipeline/chunk-indexes.js';
import { contentOf, outputTextPart, reasoningOf, responsesAnnotation, statusOf, toResponsesUsage, type ItemIds } from './chat-to-response.js';
import { extraContentOf, sealThinking } from './signed-reasoning.js';
import type { Item, Json, ResponseObject } from './types.js';

type Open =
  /** `summary`: its summary part was opened (by reasoning text); `blocks`: the signed thinking it carries (signed-reasoning.ts). */
  | { kind: 'reasoning'; index: number; item: Item; text: string; summary: boolean; blocks: unknown[] }
  | { kind: 'message'; index: number; item: Item; parts: Array<{ type: 'output_text' | 'refusal'; text: string; annotations: unknown[] }> }
  | { kind: 'call'; index: number; item: Item; args: string };

export class ResponsesEventWriter {
  private seq = 0;
  private readonly open: Open[] = [];
  /** Function calls by the chat tool-call index. */
  private readonly calls = new Map<number, Open & { kind: 'call' }>();
  private finish: string | null = null;

  constructor(readonly response: ResponseObject, private readonly ids: ItemIds) {}

  event(type: string, fields: Json): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.seq++, ...fields })}\n\n`;
  }

  start(): string {
    const snapshot = { ...this.response, output: [] };
    return this.event('response.created', { response: snapshot }) + this.event('response.in_progress', { response: snapshot });
  }

  /** The events for one chat chunk; empty when it carries nothing a reader sees. */
  chunk(chunk: ChatChunk): string {
    let out = '';
    for (const c of chunk.choices) {
      if (c.index !== 0) continue;
      const d = c.delta ?? {};
      const calls = Array.isArray(d.tool_calls) ? d.tool_calls : [];
      // A call is placed as moderation and the accumulator place it: by its index, else by its position (chunk-indexes.ts).
      const onCall = (t: (typeof calls)[number], i: number) => { out += this.call(callIndex(t, i), t.id, t.function?.name, t.function?.arguments, extraContentOf(t)); };
      // Arguments that go on with a call already under way come first: they are older than the delta's text
      // (chunked moderation releases a call's held arguments with the text that follows the call).
      const going = calls.map((t, i) => !!t && this.calls.has(callIndex(t, i)));
      calls.forEach((t, i) => { if (going[i]) onCall(t, i); });
      const content = contentOf(d.content);
      const reasoning = reasoningOf(d) || content.reasoning;
      const blocks = Array.isArray(d.thinking_blocks) && d.thinking_blocks.length ? d.thinking_blocks : undefined;
      const refusal = typeof d.refusal === 'string' ? d.refusal : '';
      // So does text that goes on with a message under way, before thinking: chunked moderation
      // releases a text's held tail with the thinking that follows it.
      const textFirst = (!!reasoning || !!blocks) && !!this.current('message');
      if (textFirst && content.text) out += this.text('output_text', content.text);
      if (textFirst && refusal) out += this.text('refusal', refusal);
      if (reasoning) out += this.reasoning(reasoning);
      if (blocks) out += this.thinking(blocks);
      if (!textFirst && content.text) out += this.text('output_text', content.text);
      if (!textFirst && refusal) out += this.text('refusal', refusal);
      if (Array.isArray(d.annotations) && d.annotations.length) out += this.annotate(d.annotations);
      calls.forEach((t, i) => { if (t && !going[i]) onCall(t, i); });
      if (c.finish_reason) this.finish = c.finish_reason;
    }
    return out;
  }

  private current<K extends Open['kind']>(kind: K): (Open & { kind: K }) | undefined {
    const last = this.open.at(-1);
    return last?.kind === kind ? (last as Open & { kind: K }) : undefined;
  }

  private add(open: Open): string {
    this.open.push(open);
    this.response.output.push(open.item);
    return this.event('response.output_item.added', { output_index: open.index, item: { ...open.item } });
  }

  /** The reasoning item under way, opened (after closing the others) if there is none. */
  private openReasoning(): { out: string; r: Open & { kind: 'reasoning' } } {
    const open = this.current('reasoning');
    if (open) return { out: '', r: open };
    const r: Open & { kind: 'reasoning' } = {
      kind: 'reasoning', index: this.response.output.length, item: { type: 'reasoning', id: this.ids.next('rs'), summary: [] }, text: '', summary: false, blocks: [],
    };
    return { out: this.closeAll() + this.add(r), r };
  }

  private reasoning(delta: string): string {
    const opened = this.openReasoning();
    const r = opened.r;
    let out = opened.out;
    if (!r.summary) {
      r.summary = true;
      out += this.event('response.reasoning_summary_part.added', { item_id: r.item.id, output_index: r.index, summary_index: 0, part: { type: 'summary_text', text: '' } });
    }
    r.text += delta;
    return out + this.event('response.reasoning_summary_text.delta', { item_id: r.item.id, output_index: r.index, summary_index: 0, delta });
  }

  /** Signed thinking (Anthropic's, with its signature) for the reasoning item: sealed into it when it closes. */
  private thinking(blocks: unknown[]): string {
    const { out, r } = this.openReasoning();
    r.blocks.push(...blocks);
    return out;
  }

  /** The message under way and its part for `channel`, each opened (with its events, in `out`) if there is none. */
  private part(channel: 'output_text' | 'refusal'): { out: string; m: Open & { kind: 'message' }; at: number } {
    let out = '';
    let m = this.current('message');
    if (!m) {
      out += this.closeAll();
      m = { kind: 'message', index: this.response.output.length, item: { type: 'message', id: this.ids.next('msg'), status: 'in_progress', role: 'assistant', content: [] }, parts: [] };
      out += this.add(m);
    }
    let at = m.parts.findIndex((p) => p.type === channel);
    if (at < 0) {
      at = m.parts.push({ type: channel, text: '', annotations: [] }) - 1;
      const part = channel === 'output_text' ? outputTextPart('') : { type: 'refusal', refusal: '' };
      out += this.event('response.content_part.added', { item_id: m.item.id, output_index: m.index, content_index: at, part });
    }
    return { out, m, at };
  }

  private text(channel: 'output_text' | 'refusal', delta: string): string {
    const { out, m, at } = this.part(channel);
    m.parts[at]!.text += delta;
    const base = { item_id: m.item.id, output_index: m.index, content_index: at };
    return out + (channel === 'output_text'
      ? this.event('response.output_text.delta', { ...base, delta, logprobs: [] })
      : this.event('response.refusal.delta', { ...base, delta }));
  }

  /** Chat's streamed annotations (a search model's url citations), each an annotation.added on the output text. */
  private annotate(list: unknown[]): string {
    const opened = this.part('output_text');
    const { m, at } = opened;
    let out = opened.out;
    const annotations = m.parts[at]!.annotations;
    for (const a of list) {
      const annotation = responsesAnnotation(a);
      out += this.event('response.output_text.annotation.added', {
        item_id: m.item.id, output_index: m.index, content_index: at, annotation_index: annotations.push(annotation) - 1, annotation,
      });
    }
    return out;
  }

  private call(index: number, id: string | undefined, name: string | undefined, args: string | undefined, extra: Json | undefined): string {
    let out = '';
    let c = this.calls.get(index);
    if (!c) {
      if (!this.current('call')) out += this.closeAll();
      const item: Item = { type: 'function_call', id: this.ids.next('fc'), call_id: id || `call_${this.ids.hex}_${index}`, name: name ?? '', arguments: '', status: 'in_progress' };
      if (extra) item.extra_content = extra;
      c = { kind: 'call', index: this.response.output.length, item, args: '' };
      this.calls.set(index, c);
      out += this.add(c);
    }
    if (!args) return out;
    c.args += args;
    return out + this.event('response.function_call_arguments.delta', { item_id: c.item.id, output_index: c.index, delta: args });
  }

  /** Closes every open item, in output order, with its .done events. */
  private closeAll(): string {
    let out = '';
    for (const o of this.open.splice(0)) {
      const id = o.item.id;
      if (o.kind === 'reasoning') {
        if (o.summary) {
          const part = { type: 'summary_text', text: o.text };
          out += this.event('response.reasoning_summary_text.done', { item_id: id, output_index: o.index, summary_index: 0, text: o.text });
          out += this.event('response.reasoning_summary_part.done', { item_id: id, output_index: o.index, summary_index: 0, part });
          o.item.summary = [part];
        }
        if (o.blocks.length) o.item.encrypted_content = sealThinking(o.blocks);
      } else if (o.kind === 'message') {
        const content = o.parts.map((p, ci) => {
          const base = { item_id: id, output_index: o.index, content_index: ci };
          const part = p.type === 'output_text' ? outputTextPart(p.text, p.annotations) : { type: 'refusal', refusal: p.text };
          out += p.type === 'output_text'
            ? this.event('response.output_text.done', { ...base, text: p.text, logprobs: [] })
            : this.event('response.refusal.done', { ...base, refusal: p.text });
          out += this.event('response.content_part.done', { ...base, part });
          return part;
        });
        o.item.content = content;
        o.item.status = 'completed';
      } else {
        o.item.arguments = o.args;
        o.item.status = 'completed';
        out += this.event('response.function_call_arguments.done', { item_id: id, output_index: o.index, name: o.item.name, arguments: o.args });
      }
      out += this.event('response.output_item.done', { output_index: o.index, item: o.item });
    }
    return out;
  }

  /** Closes the open items and ends with response.completed (or .incomplete), carrying the whole response. */
  end(usage: Usage, extra: Json = {}): string {
    let out = this.closeAll();
    const s = statusOf(this.finish);
    Object.assign(this.response, { status: s.status, incomplete_details: s.incomplete_details, usage: toResponsesUsage(usage) }, extra);
    out += this.event(s.status === 'completed' ? 'response.completed' : 'response.incomplete', { response: this.response });
    return out;
  }

  /** A failure after the stream began: response.failed, then the terminal `error` event. */
  fail(code: string, message: string, requestId: string): string {
    this.response.status = 'failed';
    this.response.error = { code, message };
    const failed = this.event('response.failed', { response: this.response });
    return failed + this.event('error', { code, message, param: null, error: { code, message, type: 'gateway_error' }, request_id: requestId });
  }
}
