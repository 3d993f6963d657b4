// Output moderation: buffered verdicts, and chunked streams where a match may
// straddle chunk boundaries and nothing of it may be released.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { createPolicyEngine } from '../src/policy/engine.js';
import type { ChunkStep, ChunkedModerator } from '../src/policy/types.js';
import { MAX_HELD } from '../src/policy/chunked-moderator.js';

const rules = [
  { name: 'violence', category: 'violence', terms: ['kill', 'make a bomb'] },
  { name: 'card_dump', category: 'fraud', pattern: 'CVV:\\s?\\d{3}', max_length: 8 },
];
const engine = createPolicyEngine({
  buf: { moderation: { rules } },
  chk: { moderation: { mode: 'chunked', rules } },
  quiet: {},
  redos: { moderation: { rules: [{ name: 'redos', category: 'test', pattern: '(a+)+$' }] } },
}, { workers: 0 });
after(() => engine.close());

interface Run { released: string; blocked: ChunkStep | undefined }

/** Feeds chunks as a stream would and collects what the moderator let out. */
function stream(m: ChunkedModerator, chunks: string[]): Run {
  let released = '';
  for (const chunk of [...chunks, undefined]) {
    const step = chunk === undefined ? m.finish() : m.push(chunk);
    if (step.blocked) return { released, blocked: step };
    released += step.release;
  }
  return { released, blocked: undefined };
}

describe('output moderation', () => {
  it('picks the mode per organisation', () => {
    assert.equal(engine.outputMode('buf'), 'buffered');
    assert.equal(engine.outputMode('chk'), 'chunked');
    assert.equal(engine.outputMode('quiet'), 'off');
  });

  it('buffered: blocks a term or pattern anywhere in the output, with category and rule', async () => {
    assert.deepEqual(await engine.moderate('buf', 'Here is how to MAKE A BOMB safely'), { blocked: true, category: 'violence', rule: 'violence' });
    assert.deepEqual(await engine.moderate('buf', 'number 4111, CVV: 123'), { blocked: true, category: 'fraud', rule: 'card_dump' });
    assert.deepEqual(await engine.moderate('buf', 'skills and killer whales are fine'), { blocked: false });
    assert.deepEqual(await engine.moderate('quiet', 'kill'), { blocked: false });
  });

  it('chunked: releases everything, exactly, when nothing matches', () => {
    const chunks = ['The killer', ' whale ', 'has skill', 's. CVV', ': ', 'none. 😀', '!'];
    const run = stream(engine.chunked('chk'), chunks);
    assert.equal(run.blocked, undefined);
    assert.equal(run.released, chunks.join(''));
  });

  it('chunked: a term split across 2 chunks is caught before any of it is released', () => {
    const run = stream(engine.chunked('chk'), ['Sure. First you ki', 'll the process.']);
    assert.deepEqual(run.blocked, { blocked: true, category: 'violence', rule: 'violence' });
    assert.equal(run.released.includes('k'), false);
    assert.ok('Sure. First you '.startsWith(run.released));
  });

  it('chunked: a match split across 3 chunks is caught; released text is an exact prefix before it', () => {
    const text = 'Card ok, CVV: 987 done';
    const run = stream(engine.chunked('chk'), ['Card ok, CV', 'V: 9', '87 done']);
    assert.equal(run.blocked?.blocked, true);
    assert.ok(text.startsWith(run.released));
    assert.ok(run.released.length <= text.indexOf('CVV'), `released ${JSON.stringify(run.released)}`);
  });

  it('chunked: a multi-word term spread one character per chunk is caught', () => {
    const run = stream(engine.chunked('chk'), [...'then make a bomb now']);
    assert.equal(run.blocked?.blocked, true);
    assert.ok(run.released.length <= 'then '.length);
  });

  it('chunked: a term at the edge waits for its right-hand context ("kill" vs "killer")', () => {
    const m = engine.chunked('chk');
    const first = m.push('orca: kill');
    assert.deepEqual(first.blocked, false);
    const run = stream(m, ['er whale']);
    assert.equal(run.blocked, undefined);
    assert.equal((first.blocked ? '' : first.release) + run.released, 'orca: killer whale');
  });

  it('chunked: a match completed by the final chunk blocks at finish', () => {
    const run = stream(engine.chunked('chk'), ['you should ', 'kill']);
    assert.equal(run.blocked?.blocked, true);
    // 15 characters seen, 11 held (the window), so only "you " went out.
    assert.equal(run.released, 'you ');
  });

  it('chunked: the window bounds what is held, and surrogate pairs are never split', () => {
    const m = engine.chunked('chk');
    // The longest rule is "make a bomb" (11), so at most 11 UTF-16 units are held back.
    const step = m.push('😀'.repeat(20));
    assert.equal(step.blocked, false);
    if (step.blocked) return;
    assert.ok(step.release.length >= 40 - 12);
    assert.equal(step.release.length % 2, 0);
    assert.equal(Buffer.byteLength(step.release), step.release.length * 2);
  });

  it('chunked: what was released before a block is an exact prefix, so its UTF-8 length is disclosed_bytes', () => {
    const text = 'Résumé 😀 数据 — and then you make a bomb, obviously.';
    const chunks = text.match(/[\s\S]{1,5}/gu)!;
    const run = stream(engine.chunked('chk'), chunks);
    assert.equal(run.blocked?.blocked, true);
    assert.ok(text.startsWith(run.released));
    assert.ok(!run.released.includes('make'));
    assert.equal(Buffer.byteLength(run.released), Buffer.byteLength(text.slice(0, run.released.length)));
    assert.ok(run.released.length > 0);
  });

  it('chunked: after a block, every further call repeats the block', () => {
    const m = engine.chunked('chk');
    assert.equal(m.push('fine so far, ').blocked, false);
    assert.equal(m.push('kill them').blocked, true);
    assert.equal(m.push('more').blocked, true);
    assert.equal(m.finish().blocked, true);
  });

  it('chunked: pushed again after a finish, released text is the left context, so a match across the finish is found', () => {
    const m = engine.chunked('chk');
    assert.equal(stream(m, ['Sure. First you ki']).released, 'Sure. First you ki');
    assert.deepEqual(m.push('ll it.'), { blocked: true, category: 'violence', rule: 'violence' });
    const clean = engine.chunked('chk');
    stream(clean, ['The ki']);
    assert.deepEqual(stream(clean, ['tten sleeps.']), { released: 'tten sleeps.', blocked: undefined }, 'no match: "kitten"');
  });

  it('reads escapes as a JSON parser does, buffered and chunked; the window counts the decoded characters', async () => {
    const escaped = '{"q":"how to make a bo\\u006db"}';
    assert.deepEqual(await engine.moderate('buf', escaped), { blocked: true, category: 'violence', rule: 'violence' });
    assert.deepEqual(await engine.moderate('buf', '{"q":"make a \\"bomb\\" sign"}'), { blocked: false }, 'an escape that reads as something else');
    for (const pieces of [['{"q":"how to make a bo\\u006d', 'b"}'], ['{"q":"how to make a b', 'o\\u00', '6db"}'], ['{"q":"how to ', 'm\\u0061ke\\u0020a\\u0020b', 'omb"}']]) {
      const run = stream(engine.chunked('chk'), pieces);
      assert.equal(run.blocked?.blocked, true, pieces.join(' | '));
      assert.ok('{"q":"how to '.startsWith(run.released), `released ${run.released}`);
    }
    // A backslash that begins no escape, and one cut off at the end, are read as themselves.
    assert.deepEqual(stream(engine.chunked('chk'), ['C:\\path\\x ', 'ends in \\u00']), { released: 'C:\\path\\x ends in \\u00', blocked: undefined });
  });

  it('reads output as a reader sees it too; the chunked window counts what a reader sees, so padding cannot push a match out of it', async () => {
    for (const text of [
      'make a b\u200bomb', 'make\u00a0a bomb', 'ｍａｋｅ a bomb', 'make a bo\u00admb', '{"q":"make a b\\u200bomb"}',
      'make a  bomb', 'make a\nbomb', 'make\ta bomb', 'make a bömb', 'make a bo\u0332mb', 'make a b\u{1d173}omb', 'make a boⅿb', 'make a ᵇomb', 'make\u2800a bomb',
    ]) {
      assert.equal((await engine.moderate('buf', text)).blocked, true, JSON.stringify(text));
    }
    // A stream that reads as written until a piece that does not: the reading made from then on still sees the match it ends.
    for (const pieces of [['A harmless lead that is long enough. how to make a b', '\u200bomb'], ['A harmless lead that is long enough. make a', '  bomb'], ['A harmless lead. make a ', ' bomb']]) {
      const run = stream(engine.chunked('chk'), pieces);
      assert.equal(run.blocked?.blocked, true, JSON.stringify(pieces));
      assert.ok(!run.released.includes('make'), JSON.stringify(run.released));
    }
    const padded = ['harmless lead. make', '\u200b'.repeat(40), ' a b', '\u200b'.repeat(40), 'omb'];
    const run = stream(engine.chunked('chk'), padded);
    assert.equal(run.blocked?.blocked, true);
    assert.ok(!run.released.includes('make'), JSON.stringify(run.released));
  });

  it('chunked: invisible text is released as it comes, so the held text and each push\'s work stay bounded; padding between letters is refused past MAX_HELD', () => {
    const m = engine.chunked('chk');
    let released = 0;
    for (let i = 0; i < 5_000; i++) {
      const step = m.push('\u200b'.repeat(8));
      assert.equal(step.blocked, false);
      if (!step.blocked) released += step.release.length;
    }
    assert.ok(released >= 40_000 - 11, `held ${40_000 - released} of 40000 invisible characters`);
    // Fewer letters than the window with runs of invisible characters between them: it must hold all of it, up to a point.
    const padded = engine.chunked('chk');
    let last: ChunkStep = { blocked: false, release: '' };
    for (let i = 0; i < 10 && !last.blocked; i++) last = padded.push(`k${'\u200b'.repeat(MAX_HELD / 8)}`);
    assert.deepEqual(last.blocked ? last : 'not blocked', { blocked: true, category: 'unreadable', rule: 'held_text_cap' });
  });

  it('chunked: a term inside or overlapping a longer one of the list is found when the longer one is not', () => {
    const terms = createPolicyEngine({
      a: { moderation: { mode: 'chunked', rules: [{ name: 'b', category: 'violence', terms: ['bomb', 'a bomb recipe'] }] } },
      b: { moderation: { mode: 'chunked', rules: [{ name: 'b', category: 'violence', terms: ['bomb-making', 'bomb'] }] } },
      c: { moderation: { mode: 'chunked', rules: [{ name: 'b', category: 'violence', terms: ['x-y', 'y-z'] }] } },
    }, { workers: 0 });
    for (const [org, pieces] of [['a', ['Here', ' is', ' a', ' bomb', ' recipe', 's', ' for', ' you', '.']], ['b', ['bomb', '-making', 's are bad']], ['c', ['wx-y-', 'z.']]] as const) {
      const run = stream(terms.chunked(org), [...pieces]);
      assert.equal(run.blocked?.blocked, true, pieces.join('|'));
    }
  });

  it('chunked: an escape or a surrogate pair a finish cuts off is read with what comes after it', () => {
    for (const [before, after] of [['{"q":"make a bo\\u00', '6db"}'], ['make a \ud835', '\udc1bomb now']]) {
      const m = engine.chunked('chk');
      assert.equal(m.push(before!).blocked, false);
      assert.equal(m.finish().blocked, false);
      assert.equal(m.push(after!).blocked || m.finish().blocked, true, `${before} | finish | ${after}`);
    }
  });

  it('runs a catastrophic pattern (a+)+$ over 100k characters in linear time (RE2)', async () => {
    const started = performance.now();
    const verdict = await engine.moderate('redos', `${'a'.repeat(100_000)}b`);
    const elapsed = performance.now() - started;
    assert.deepEqual(verdict, { blocked: false });
    // A correctness bound: a backtracking engine would not finish this in our lifetime.
    assert.ok(elapsed < 500, `took ${elapsed} ms`);
  });
});
