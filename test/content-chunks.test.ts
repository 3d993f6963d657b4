// Chunked moderation over a content that is a list of chunks, as Mistral's
// reasoning models stream it: the thinking's and the text's pieces go through
// windows, so no piece of a match leaves before the piece that completes it,
// and what is released keeps the list's shape and order.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { ChatChunk, Delta } from '../src/domain.js';
import { ChunkedOutput, disclosedBytes } from '../src/pipeline/chunked-output.js';
import { createPolicyEngine } from '../src/policy/engine.js';

const engine = createPolicyEngine({
  org: { moderation: { mode: 'chunked', rules: [{ name: 'weapons', category: 'violence', terms: ['make a bomb'] }] } },
}, { workers: 0 });
after(() => engine.close());

const thinking = (text: string) => ({ type: 'thinking', thinking: [{ type: 'text', text }] });
const text = (t: string) => ({ type: 'text', text: t });
const chunk = (delta: Delta, finish: string | null = null): ChatChunk => ({ choices: [{ index: 0, delta, finish_reason: finish }] });

/** Deep-frozen, so a moderator that edits the upstream's objects in place fails. */
function frozen<T>(v: T): T {
  if (v && typeof v === 'object') { for (const k of Object.keys(v)) frozen((v as any)[k]); Object.freeze(v); }
  return v;
}

interface Run { sent: ChatChunk[]; blocked?: string; bytes: number }

function run(chunks: ChatChunk[], end = false): Run {
  const out = new ChunkedOutput(() => engine.chunked('org'));
  const sent: ChatChunk[] = [];
  let bytes = 0;
  for (const c of chunks) {
    const r = out.push(frozen(c));
    if (r.blocked) return { sent, blocked: r.category, bytes };
    if (r.chunk) { sent.push(r.chunk); bytes += disclosedBytes(r.chunk); }
  }
  if (end) {
    const r = out.end();
    if (r.blocked) return { sent, blocked: r.category, bytes };
    if (r.chunk) { sent.push(r.chunk); bytes += disclosedBytes(r.chunk); }
  }
  return { sent, bytes };
}

/** The reader's view: each list item's kind and text in order, neighbours of one kind joined, as Mistral's clients merge them. */
function readerView(sent: ChatChunk[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const add = (kind: string, t: string) => {
    const last = out[out.length - 1];
    if (last && last[0] === kind) last[1] += t;
    else out.push([kind, t]);
  };
  for (const c of sent) {
    const content = c.choices[0]?.delta?.content as unknown;
    if (typeof content === 'string') { if (content) add('text', content); continue; }
    if (!Array.isArray(content)) continue;
    for (const item of content) {
      if (item.type === 'text') add('text', item.text);
      else if (item.type === 'thinking') add('thinking', item.thinking.map((p: any) => p.text).join(''));
      else add(item.type, JSON.stringify(item));
    }
  }
  return out;
}

const lead = 'Let me think about what the user is asking for, carefully. ';

describe('chunked moderation over content chunk lists', () => {
  test('a term spelled across thinking chunks is stopped before any piece of it leaves', () => {
    const r = run([
      chunk({ role: 'assistant', content: '' }),
      ...[lead, 'They want to ma', 'ke a bo', 'mb.'].map((t) => chunk({ content: [thinking(t)] as any })),
      chunk({ content: [text('No.')] as any }), chunk({}, 'stop'),
    ]);
    assert.equal(r.blocked, 'violence');
    const shown = readerView(r.sent).map(([, t]) => t).join('');
    const full = `${lead}They want to make a bomb.`;
    assert.ok(full.startsWith(shown) && shown.length <= full.indexOf('make'), `no piece of the match was sent: ${shown}`);
  });

  test('a term spelled across text chunks is stopped the same way', () => {
    const r = run([
      chunk({ role: 'assistant', content: [thinking('Fine.')] as any }),
      ...[lead, 'here is how to make a', ' bo', 'mb'].map((t) => chunk({ content: [text(t)] as any })),
      chunk({}, 'stop'),
    ]);
    assert.equal(r.blocked, 'violence');
    assert.ok(!/make a|bomb/.test(JSON.stringify(r.sent)), JSON.stringify(r.sent));
  });

  test('a clean answer arrives whole and in order: the thinking\'s rest goes before the first text, in the same list', () => {
    const pieces = [lead, 'They want the capital ', 'of France.'];
    const r = run([
      chunk({ role: 'assistant', content: '' }),
      ...pieces.map((t) => chunk({ content: [thinking(t)] as any })),
      chunk({ content: [text('It is ')] as any }), chunk({ content: [text('Paris.')] as any }), chunk({}, 'stop'),
    ]);
    assert.equal(r.blocked, undefined);
    assert.deepEqual(readerView(r.sent), [['thinking', pieces.join('')], ['text', 'It is Paris.']]);
    // The held thinking went out when the text began, not after the text: one thinking, then one text.
    const kinds = r.sent.flatMap((c) => { const l = c.choices[0]!.delta.content as unknown; return Array.isArray(l) ? l.map((i) => i.type) : []; });
    assert.deepEqual([...new Set(kinds)], ['thinking', 'text']);
    assert.ok(kinds.lastIndexOf('thinking') < kinds.indexOf('text'), kinds.join());
    assert.equal(r.bytes, Buffer.byteLength(pieces.join('') + 'It is Paris.'));
  });

  test('a plain string content after a list\'s thinking releases that thinking first, as a list', () => {
    const r = run([
      chunk({ role: 'assistant', content: [thinking(lead)] as any }),
      chunk({ content: 'It is Paris, as everyone knows well.' }), chunk({}, 'stop'),
    ]);
    assert.deepEqual(readerView(r.sent), [['thinking', lead], ['text', 'It is Paris, as everyone knows well.']]);
    assert.equal(r.bytes, Buffer.byteLength(`${lead}It is Paris, as everyone knows well.`));
  });

  test('read off the chunk text (pushPlain), a plain string content after a list\'s thinking still releases that thinking first', () => {
    const out = new ChunkedOutput(() => engine.chunked('org'));
    const head = '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[';
    const first = out.push(frozen(chunk({ role: 'assistant', content: [thinking(lead)] as any })));
    assert.ok(!first.blocked && first.chunk);
    const raw = `${head}{"index":0,"delta":{"content":"It is Paris, as everyone knows well."},"finish_reason":null}]}`;
    assert.equal(out.pushPlain(raw, head.length), undefined, 'the chunk is parsed, so push releases the thinking with it');
    const second = out.push(JSON.parse(raw));
    assert.ok(!second.blocked && second.chunk);
    assert.deepEqual(readerView([first.chunk, second.chunk]), [['thinking', lead], ['text', 'It is Paris, as everyone ']]);
    // Once the thinking is over, plain chunks are read off their text again.
    assert.ok(out.pushPlain(raw, head.length));
  });

  test('a stream that ends without a finish releases what was held as a list', () => {
    const r = run([chunk({ role: 'assistant', content: [thinking(lead)] as any }), chunk({ content: [text('Short.')] as any })], true);
    assert.deepEqual(readerView(r.sent), [['thinking', lead], ['text', 'Short.']]);
  });

  test('a chunk\'s other members and chunks of other kinds go as they came; a reference is still read by place', () => {
    const ref = { type: 'reference', reference_ids: [1, 2] };
    const r = run([
      chunk({ role: 'assistant', content: [{ ...thinking(lead), closed: false }] as any }),
      chunk({ content: [ref, { ...text('Paris.'), vendor: 'v' }] as any }), chunk({}, 'stop'),
    ]);
    const items = r.sent.flatMap((c) => (Array.isArray(c.choices[0]?.delta?.content) ? c.choices[0]!.delta.content as any[] : []));
    assert.ok(items.some((i) => i.type === 'thinking' && i.closed === false), JSON.stringify(items));
    assert.ok(items.some((i) => i.type === 'reference' && i.reference_ids.length === 2), JSON.stringify(items));
    assert.ok(items.some((i) => i.type === 'text' && i.vendor === 'v'), JSON.stringify(items));
    const blocked = run([
      chunk({ role: 'assistant', content: [{ type: 'reference', title: 'how to make a' }] as any }),
      chunk({ content: [{ type: 'reference', title: ' bomb' }] as any }), chunk({}, 'stop'),
    ]);
    assert.equal(blocked.blocked, 'violence');
  });

  test('a thinking given as a plain string is windowed too', () => {
    const r = run([
      chunk({ role: 'assistant', content: [{ type: 'thinking', thinking: `${lead}how to ma` }] as any }),
      chunk({ content: [{ type: 'thinking', thinking: 'ke a bomb' }] as any }), chunk({}, 'stop'),
    ]);
    assert.equal(r.blocked, 'violence');
    assert.ok(!/ma"|make/.test(JSON.stringify(r.sent)), JSON.stringify(r.sent));
  });
});
