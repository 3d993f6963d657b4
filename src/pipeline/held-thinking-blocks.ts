// Anthropic's signed thinking as a chat stream hands it to its caller: every
// block of a choice together, in one delta, on the chunk that carries the
// choice's finish reason.
//
// The translator (providers/anthropic/stream.ts) sends each block as it is
// signed, in a delta of its own (`thinking_blocks: [block]`). Callers merge
// such deltas differently: the openai SDK's stream accumulator assigns a
// member it does not know, so each delta replaced the one before it and
// finalChatCompletion() kept only the last block, where create() has them
// all; LangChain's merge and sluice's own accumulator concatenate arrays, so
// a running (cumulative) list would repeat blocks there. One delta holding the
// whole list reads the same to all of them, and to a raw SSE reader, and Claude
// refuses a tool loop whose turn comes back with any block missing.
//
// Why at the finish, and not when the first text or tool call follows the
// thinking: with interleaved thinking Claude thinks again after a tool_use,
// and those blocks would need a second delta, which the openai SDK would let
// replace the first. The blocks are only read when the turn is sent back, so
// holding them costs the caller no time: the thinking's text still streams as
// `reasoning_content` as it comes.
//
// This is done here, on the chat wire, and not in the translator: the
// Responses API's translation of the same stream (responses/stream-events.ts)
// seals each run of blocks into the reasoning item it belongs to, and closes
// that item when the next text or call begins, so it needs them per run, as
// they come. Chunked moderation (chunked-output.ts) holds them until the
// thinking is over and releases them merged; held here as well, a moderated
// and an unmoderated stream end the same for a chat caller.
import type { ChatChunk, ChunkChoice } from '../domain.js';

/** A choice's own members, which isEmpty reads itself; any other that is set is something to a reader. */
const CHOICE_OWN = new Set(['index', 'delta', 'finish_reason', 'logprobs']);

export class HeldThinkingBlocks {
  /** Blocks by choice index, in the order they came. */
  private readonly held = new Map<number, unknown[]>();

  /**
   * The chunk as it goes to the caller: its blocks taken out and held, and a
   * finishing choice's held blocks put in; the same object when it carries
   * none of either, undefined when it carried only blocks and nothing is left
   * in it to send.
   */
  pass(chunk: ChatChunk): ChatChunk | undefined {
    const out = this.place(chunk);
    if (out === undefined) return chunk;
    return out.choices.length === 0 && chunk.choices.length > 0 && !hasOwn(out) ? undefined : out;
  }

  /** What is still held, as a chunk of its own: a stream that ended without a finish reason; undefined when nothing is. */
  rest(): ChatChunk | undefined {
    if (this.held.size === 0) return undefined;
    const choices: ChunkChoice[] = [...this.held].map(([index, blocks]) => ({ index, delta: { thinking_blocks: blocks }, finish_reason: null }));
    this.held.clear();
    return { choices };
  }

  /** The chunk changed, or undefined when it is as it came. */
  private place(chunk: ChatChunk): ChatChunk | undefined {
    let choices: ChunkChoice[] | undefined;
    chunk.choices.forEach((c, i) => {
      const d = c.delta;
      const blocks = d?.thinking_blocks;
      const finishing = !!c.finish_reason && this.held.has(c.index);
      if (blocks == null && !finishing) return;
      choices ??= chunk.choices.slice();
      let delta = d ?? {};
      if (blocks != null) {
        const list = Array.isArray(blocks) ? blocks : [blocks];
        const held = this.held.get(c.index);
        if (held) held.push(...list);
        else this.held.set(c.index, list.slice());
        const { thinking_blocks: _taken, ...others } = delta;
        delta = others;
      }
      if (c.finish_reason && this.held.has(c.index)) {
        delta = { ...delta, thinking_blocks: this.held.get(c.index)! };
        this.held.delete(c.index);
      }
      choices[i] = { ...c, delta };
    });
    if (!choices) return undefined;
    // A choice that held only blocks is nothing to a reader now.
    return { ...chunk, choices: choices.filter((c) => !isEmpty(c)) };
  }
}

function isEmpty(c: ChunkChoice): boolean {
  if (c.finish_reason || c.logprobs != null) return false;
  for (const k in c) if (!CHOICE_OWN.has(k) && c[k] != null) return false;
  for (const k in c.delta) if (c.delta[k] != null) return false;
  return true;
}

/** The chunk has members of its own beside its choices that a reader would see (usage, citations). */
function hasOwn(chunk: ChatChunk): boolean {
  for (const k in chunk) if (k !== 'choices' && k !== 'id' && k !== 'object' && k !== 'created' && k !== 'model' && chunk[k] != null) return true;
  return false;
}
