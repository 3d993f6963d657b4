// One call through an origin's connections (src/upstream/origin-clients.ts), with
// the handler API as the gateway drives it, for the tests of that class.
import type { CallController, OriginClients } from '../../src/upstream/origin-clients.js';

export interface Answer { status: number; body: string }

/**
 * One call, settled with the answer or the error the connection reported; `onController` gets the
 * call's controller as the call is handed over, `onHeaders` once the answer's head is in.
 */
export function call(
  pool: OriginClients, path: string, onController?: (c: CallController) => void, headers: Record<string, string> = {},
  onHeaders?: (c: CallController) => void,
): Promise<Answer> {
  return new Promise((ok, fail) => {
    let status = 0;
    let body = '';
    pool.dispatch({ path, method: 'POST', body: 'hi', headers: { 'content-type': 'text/plain', ...headers } }, {
      onRequestStart(c) { onController?.(c); },
      onResponseStart(c, s) { status = s; onHeaders?.(c); },
      onResponseData(_c, chunk) { body += chunk.toString(); },
      onResponseEnd() { ok({ status, body }); },
      onResponseError(_c, err) { fail(err); },
    });
  });
}

