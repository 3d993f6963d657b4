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

export function clearChunks(list: unknown[], w: ChunkWindows): ClearedChunks {
  const sent: unknown[] = [];
  const unread: unknown[] = [];
  let changed = false;
  for (const item of list) {
    if (isTextItem(item)) {
      const ended = w.endThinking();
      if (ended) { appendThinking(sent, ended); changed = true; }
      unread.push({ ...item, text: undefined });
      const released = w.text(item.text);
      if (released === item.text) { sent.push(item); continue; }
      changed = true;
      if (released || hasOthers(item, 'text')) sent.push({ ...item, text: released });
    } else if (isThinking(item)) {
      const cleared = clearThinking(item, w);
      unread.push(cleared.unread);
      if (cleared.sent === item) { sent.push(item); continue; }
      changed = true;
      if (cleared.sent) sent.push(cleared.sent);
    } else {
      sent.push(item);
      unread.push(item);
    }
  }
  if (!changed) return { sent: list, unread };
  return { sent: sent.length > 0 ? sent : undefined, unread };
}

/** A thinking chunk with its texts through the thinking window: the same object when unchanged, undefined when nothing of it may go yet. */
function clearThinking(item: Json, w: ChunkWindows): { sent: Json | undefined; unread: Json } {
  const t = item.thinking;
  if (typeof t === 'string') {
    const released = w.thinking(t);
    const unread = { ...item, thinking: undefined };
    if (released === t) return { sent: item, unread };
    return { sent: released || hasOthers(item, 'thinking') ? { ...item, thinking: released } : undefined, unread };
  }
  const inner: unknown[] = [];
  const innerUnread: unknown[] = [];
  let changed = false;
  for (const part of t as unknown[]) {
    if (!isTextItem(part)) { inner.push(part); innerUnread.push(part); continue; }
    innerUnread.push({ ...part, text: undefined });
    const released = w.thinking(part.text);
    if (released === part.text) { inner.push(part); continue; }
    changed = true;
    if (released || hasOthers(part, 'text')) inner.push({ ...part, text: released });
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
