// Serialises chat.completion.chunk lines. The fixed part of every line is built
// once per stream, so each delta costs one JSON.stringify of its text.
import type { Usage } from '../domain.js';

export class ChunkWriter {
  private readonly head: string;

  constructor(id: string, model: string, created: number) {
    this.head = `data: {"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"choices":`;
  }

  delta(role: string | undefined, content: string | undefined, finishReason: string | undefined): string {
    let delta = '';
    if (role !== undefined) delta += `"role":${JSON.stringify(role)}`;
    if (content !== undefined) delta += `${delta ? ',' : ''}"content":${JSON.stringify(content)}`;
    return `${this.head}[{"index":0,"delta":{${delta}},"finish_reason":${finishReason === undefined ? 'null' : JSON.stringify(finishReason)}}]}\n\n`;
  }

  /** A chunk with empty choices: carries usage, and the gateway block when asked for. */
  tail(usage: Usage, gateway?: Record<string, unknown>): string {
    const g = gateway ? `,"gateway":${JSON.stringify(gateway)}` : '';
    return `${this.head}[],"usage":${JSON.stringify(usage)}${g}}\n\n`;
  }
}

export const DONE = 'data: [DONE]\n\n';
