// AnswerHeads for tests: one made from a record, laid out as a connection
// reads a head, and a record made from one, as node's IncomingHttpHeaders
// read (names in lower case, a repeated header as an array, set-cookie
// always an array).
import { AnswerHead } from '../../src/upstream/h1/answer-head.js';

export function headOf(headers: Record<string, string>): AnswerHead {
  let text = '';
  const spans: number[] = [];
  for (const [name, value] of Object.entries(headers)) {
    spans.push(text.length, text.length + name.length);
    text += `${name}: `;
    spans.push(text.length, text.length + value.length);
    text += `${value}\r\n`;
  }
  return new AnswerHead(text, spans);
}

export function recordOf(head: AnswerHead): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (let i = 0; i < head.size; i++) {
    const name = head.name(i);
    const had = out[name];
    if (had === undefined) out[name] = name === 'set-cookie' ? [head.value(i)] : head.value(i);
    else out[name] = [...(Array.isArray(had) ? had : [had]), head.value(i)];
  }
  return out;
}
