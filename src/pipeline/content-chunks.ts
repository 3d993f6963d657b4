// A content that is a list of chunks, as Mistral's reasoning models stream it:
// `[{type: "thinking", thinking: [{type: "text", text}]}]` while the model
// thinks, then `[{type: "text", text}]` (or a plain string). Chunked moderation
// puts those texts through windows, as it does a string content: the text
// chunks through the choice's content window, the thinking's text items
// through a thinking window. Sent as they came, a match's first pieces would
// reach the reader before the piece that completes it.
//
// Every chunk keeps its other members, and a chunk of another kind (a
// reference) goes as it came, read by place like any other member.
import { isObj } from '../responses/types.js';

type Json = Record<string, unknown>;

/** The windows one choice's content chunks go through; each returns what it releases. */
export interface ChunkWindows {
  text(piece: string): string;
  thinking(piece: string): string;
  /** The thinking window's held text, released because the answer's text began (empty when none). */
  endThinking(): string;
}

export interface ClearedChunks {
  /** The list to send; undefined when nothing in it may be sent yet. The same array when nothing changed. */
  sent: unknown[] | undefined;
  /** The list with the windowed texts taken out, in place, for the by-place reading of the rest. */
  unread: unknown[];
}

const isTextItem = (v: unknown): v is Json & { text: string } => isObj(v) && v.type === 'text' && typeof v.text === 'string';
const isThinking = (v: unknown): v is Json => isObj(v) && v.type === 'thinking' && (typeof v.thinking === 'string' || Array.isArray(v.thinking));

/** Whether an item says anything but its type and the text that was taken out of it. */
function hasOthers(item: Json, taken: string): boolean {
  for (const k in item) if (k !== 'type' && k !== taken) return true;
  return false;
}

/** What one item became: `sent` is the item itself when unchanged, undefined when nothing of it may go yet. */
interface Cleared { sent: Json | undefined; unread: Json }

/** An item whose `key` text went through `step`, the rest of it kept; the item is left out only when nothing else of it remains. */
function clearText(item: Json, key: string, text: string, step: (piece: string) => string): Cleared {
  const unread = { ...item, [key]: undefined };
  const released = step(text);
  if (released === text) return { sent: item, unread };
  return { sent: released || hasOthers(item, key) ? { ...item, [key]: released } : undefined, unread };
}

export function clearChunks(list: unknown[], w: ChunkWindows): ClearedChunks {
  const sent: unknown[] = [];
  const unread: unknown[] = [];
  let changed = false;
  for (const item of list) {
    let cleared: Cleared;
    if (isTextItem(item)) {
      const ended = w.endThinking();
      if (ended) { appendThinking(sent, ended); changed = true; }
      cleared = clearText(item, 'text', item.text, w.text);
    } else if (isThinking(item)) {
      cleared = clearThinking(item, w);
    } else {
      cleared = { sent: item as Json, unread: item as Json };
    }
    unread.push(cleared.unread);
    if (cleared.sent !== item) changed = true;
    if (cleared.sent) sent.push(cleared.sent);
  }
  if (!changed) return { sent: list, unread };
  return { sent: sent.length > 0 ? sent : undefined, unread };
}

/** A thinking chunk with its texts through the thinking window. */
function clearThinking(item: Json, w: ChunkWindows): Cleared {
  const t = item.thinking;
  if (typeof t === 'string') return clearText(item, 'thinking', t, w.thinking);
  const inner: unknown[] = [];
  const innerUnread: unknown[] = [];
  let changed = false;
  for (const part of t as unknown[]) {
    const cleared = isTextItem(part) ? clearText(part, 'text', part.text, w.thinking) : { sent: part as Json, unread: part as Json };
    innerUnread.push(cleared.unread);
    if (cleared.sent !== part) changed = true;
    if (cleared.sent) inner.push(cleared.sent);
  }
  const unread = { ...item, thinking: innerUnread };
  if (!changed) return { sent: item, unread };
  return { sent: inner.length > 0 || hasOthers(item, 'thinking') ? { ...item, thinking: inner } : undefined, unread };
}

/** Adds released answer text to a content list: onto its last text chunk, or as a new one. */
export function appendText(list: unknown[], text: string): void {
  const last = list[list.length - 1];
  if (isTextItem(last)) list[list.length - 1] = { ...last, text: last.text + text };
  else list.push({ type: 'text', text });
}

/** Adds released thinking to a content list: onto its last thinking chunk, or as a new one. */
export function appendThinking(list: unknown[], text: string): void {
  const last = list[list.length - 1];
  if (isThinking(last)) {
    const t = last.thinking;
    if (typeof t === 'string') { list[list.length - 1] = { ...last, thinking: t + text }; return; }
    const parts = (t as unknown[]).slice();
    const tail = parts[parts.length - 1];
    if (isTextItem(tail)) parts[parts.length - 1] = { ...tail, text: tail.text + text };
    else parts.push({ type: 'text', text });
    list[list.length - 1] = { ...last, thinking: parts };
  } else {
    list.push({ type: 'thinking', thinking: [{ type: 'text', text }] });
  }
}

/** UTF-8 bytes of the texts in a content list that chunked moderation windows. */
export function chunkListBytes(list: unknown[]): number {
  let n = 0;
  for (const item of list) {
    if (isTextItem(item)) n += Buffer.byteLength(item.text);
    else if (isThinking(item)) {
      const t = item.thinking;
      if (typeof t === 'string') n += Buffer.byteLength(t);
      else for (const part of t as unknown[]) if (isTextItem(part)) n += Buffer.byteLength(part.text);
    }
  }
  return n;
}
