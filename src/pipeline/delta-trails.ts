// The texts of a choice's deltas that sluice does not join itself, each read
// joined with the pieces that came before it in the same place.
//
// Content, refusal, reasoning and call arguments stream in pieces that every
// client joins, and sluice joins them too: a window each in chunked
// moderation, one text each in the accumulator. Any other member (a
// provider's, or one nobody has invented yet) may stream in pieces as well:
// OpenRouter's reasoning_details appends an item per chunk, each holding the
// next piece of one text. Whether a client joins such pieces or keeps the
// last, sluice cannot know, so it changes none of them; but moderation reads
// them joined, or a term spelled across two chunks would pass.
//
// A trail is one place in a choice's deltas (a member, an item of it, a member
// of that...), and each text that arrives there extends it. Places are a tree
// of maps rather than path strings: a path built for every text would cost its
// depth in memory each time, and an answer may nest thousands deep.
import { TEXT_MEMBERS, type Delta } from '../domain.js';
import { NOT_SHOWN, shownTexts } from '../policy/shown-texts.js';
import { isObj } from '../responses/types.js';
import { callIndex } from './chunk-indexes.js';

/** TEXT_MEMBERS, whose string pieces sluice joins itself. */
export const TEXT_MEMBER_SET: ReadonlySet<string> = new Set(TEXT_MEMBERS);

export class Trail<T> {
  private kids: Map<string | number, Trail<T>> | undefined;
  /** What the reader keeps for this place: the text so far, or a moderator. */
  state: T | undefined;

  at(key: string | number): Trail<T> {
    const kids = (this.kids ??= new Map());
    let t = kids.get(key);
    if (!t) kids.set(key, (t = new Trail()));
    return t;
  }

  /** Every place's state, in the order the places were first seen. A loop over a stack: the tree may be deep. */
  states(): T[] {
    const out: T[] = [];
    const stack: Trail<T>[] = [this];
    while (stack.length > 0) {
      const t = stack.pop()!;
      if (t.state !== undefined) out.push(t.state);
      if (!t.kids) continue;
      // Pushed in reverse, one at a time: a spread of a wide node's children would overflow the call's arguments.
      const kids = [...t.kids.values()];
      for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]!);
    }
    return out;
  }
}

/**
 * `alone` is a number's text: no client joins numbers as it joins text pieces,
 * so it is read by itself (joined, a count sent in every chunk would spell a
 * long run of digits).
 */
type Visit<T> = (trail: Trail<T>, text: string, alone: boolean) => void;

/**
 * Calls `visit` with each text of `delta` a reader is shown (shown-texts.ts)
 * but those sluice joins itself, and the trail of its place. A tool call's
 * place is its `index`, by which clients merge calls, not its position in the
 * chunk. Thinking blocks come whole and are read whole by the caller.
 */
export function walkDelta<T>(root: Trail<T>, delta: Delta, visit: Visit<T>): void {
  for (const k of Object.keys(delta)) {
    const v = delta[k];
    if (v === null || v === undefined || NOT_SHOWN.has(k) || k === 'thinking_blocks' || (TEXT_MEMBER_SET.has(k) && typeof v === 'string')) continue;
    const at = root.at(k);
    if (k === 'tool_calls' && Array.isArray(v)) {
      v.forEach((t, i) => {
        const call = at.at(callIndex(t, i));
        if (!isObj(t)) return walk(call, t, visit);
        walkMembers(call, t, visit, (key, value) => {
          if (key !== 'function' || !isObj(value)) return false;
          walkMembers(call.at(key), value, visit, isArguments);
          return true;
        });
      });
    } else if (k === 'function_call' && isObj(v)) {
      walkMembers(at, v, visit, isArguments);
    } else {
      walk(at, v, visit);
    }
  }
}

/**
 * A completion's or chunk's own members that name, count or pad, never say:
 * when it was made, the model's name, its fingerprint and tier, the usage, and OpenAI's
 * obfuscation padding (random letters, which a term could match by chance);
 * the choices are read apart. Every other member is read, deny by default:
 * Perplexity and xAI put their citations and search results there.
 */
const COMPLETION_OWN: ReadonlySet<string> = new Set(['choices', 'created', 'model', 'system_fingerprint', 'service_tier', 'usage', 'obfuscation']);
const isCompletionOwn = (key: string): boolean => COMPLETION_OWN.has(key);

/** As walkDelta, for a chunk's members beside its choices; whether it has any (a chunk that does is never held back whole). */
export function walkTop<T>(root: Trail<T>, chunk: Record<string, unknown>, visit: Visit<T>): boolean {
  return walkMembers(root, chunk, visit, isCompletionOwn) > 0;
}

/**
 * A streamed choice's members that are read apart (its delta) or say nothing:
 * its index, what ended it (`finish_reason`, OpenRouter's
 * `native_finish_reason`, and vLLM's `stop_reason`, the caller's own stop
 * string), and Together's `seed` (a 19-digit number every
 * answer carries, which a card rule would read as digits). Every other member
 * a provider puts beside them (a `text`, a `message` repeated in a stream) is
 * shown to whoever reads it, and read, deny by default (until 2026-11-29 a
 * choice's other members went out unmoderated). A JSON answer's choice reads
 * its message apart too.
 */
const STREAMED_CHOICE_UNREAD: ReadonlySet<string> = new Set(['index', 'delta', 'finish_reason', 'native_finish_reason', 'stop_reason', 'seed']);
const CHOICE_UNREAD: ReadonlySet<string> = new Set([...STREAMED_CHOICE_UNREAD, 'message']);

/** As walkTop, for a streamed choice's members beside its delta (a `message` included); whether it has any. */
export function walkChoice<T>(root: Trail<T>, choice: Record<string, unknown>, visit: Visit<T>): boolean {
  return walkMembers(root, choice, visit, (key) => STREAMED_CHOICE_UNREAD.has(key)) > 0;
}

/** The texts of a JSON answer's choice beside its message, each whole, appended to `out`. */
export function choiceTexts(choice: Record<string, unknown>, out: string[]): string[] {
  for (const k of Object.keys(choice)) if (!CHOICE_UNREAD.has(k) && !NOT_SHOWN.has(k)) shownTexts(choice[k], out);
  return out;
}

/** The texts of a completion's members beside its choices, each whole: what a JSON answer shows there. */
export function topTexts(completion: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const k of Object.keys(completion)) if (!COMPLETION_OWN.has(k) && !NOT_SHOWN.has(k)) shownTexts(completion[k], out);
  return out;
}

/** A call's `arguments` string has a window of its own. */
const isArguments = (key: string, value: unknown): boolean => key === 'arguments' && typeof value === 'string';

/**
 * Each shown member of `o` walked under a place of its own, but those `skip` takes (reading them
 * itself, or leaving them to a window); how many say something: a null (OpenRouter's
 * `native_finish_reason` on every chunk) says nothing, and is no reason to send a chunk on.
 */
function walkMembers<T>(at: Trail<T>, o: Record<string, unknown>, visit: Visit<T>, skip: (key: string, value: unknown) => boolean): number {
  let n = 0;
  for (const key of Object.keys(o)) {
    const v = o[key];
    if (v === null || v === undefined || NOT_SHOWN.has(key) || skip(key, v)) continue;
    walk(at.at(key), v, visit);
    n++;
  }
  return n;
}

function walk<T>(root: Trail<T>, value: unknown, visit: Visit<T>): void {
  const places: Trail<T>[] = [root];
  const values: unknown[] = [value];
  while (values.length > 0) {
    const at = places.pop()!;
    const v = values.pop();
    if (typeof v === 'string') {
      if (v) visit(at, v, false);
      continue;
    }
    if (typeof v === 'number') {
      visit(at, String(v), true);
      continue;
    }
    let keys: Array<string | number>;
    if (Array.isArray(v)) keys = v.map((_, i) => i);
    else if (isObj(v)) keys = Object.keys(v).filter((k) => !NOT_SHOWN.has(k));
    else continue;
    // Places made in document order (states() keeps it), then stacked in reverse to be walked in it.
    const kids = keys.map((k) => at.at(k));
    for (let i = keys.length - 1; i >= 0; i--) {
      places.push(kids[i]!);
      values.push((v as Record<string | number, unknown>)[keys[i]!]);
    }
  }
}
