// Sends adapter-built requests through the pools and turns the replies back
// into results or a stream of normalised events.
import { createParser } from 'eventsource-parser';
import type { Dispatcher } from 'undici';
import type { ProviderAdapter, StreamEvent, UpstreamRequest } from '../domain.js';
import { GatewayError } from '../errors.js';
import type { UpstreamPools } from './pools.js';
import type { ClientSignal } from '../http/client-signal.js';
import { upstreamStatusError, upstreamTransportError } from './upstream-errors.js';

export async function send(pools: UpstreamPools, adapter: ProviderAdapter, up: UpstreamRequest, signal: ClientSignal): Promise<Dispatcher.ResponseData> {
  let res: Dispatcher.ResponseData;
  try {
    res = await pools.get(up.url.origin).request({
      path: up.url.pathname + up.url.search,
      method: up.method,
      headers: up.headers,
      body: up.body,
      signal,
    });
  } catch (err) {
    throw upstreamTransportError(err);
  }
  if (res.statusCode >= 400) {
    const text = await res.body.text().catch(() => '');
    throw upstreamStatusError(res.statusCode, adapter.errorMessage(res.statusCode, text));
  }
  return res;
}

export async function sendJson(pools: UpstreamPools, adapter: ProviderAdapter, up: UpstreamRequest, signal: ClientSignal): Promise<unknown> {
  const res = await send(pools, adapter, up, signal);
  try {
    return await res.body.json();
  } catch (err) {
    if (signal.aborted) throw upstreamTransportError(err);
    throw new GatewayError('upstream_error', 'The upstream returned a body that is not JSON.', { cause: err });
  }
}

/**
 * Yields the normalised events of each upstream read as one batch, so that the
 * caller writes them with one syscall rather than one per token. A body that
 * ends before the provider signalled completion (a `done`, or a finish reason)
 * is a mid-stream failure and ends with an error event, so truncation never
 * passes for a complete answer.
 */
export async function* sseEvents(res: Dispatcher.ResponseData, adapter: ProviderAdapter): AsyncGenerator<StreamEvent[]> {
  const translator = adapter.streamTranslator();
  let pending: StreamEvent[] = [];
  let finished = false;
  const parser = createParser({
    onEvent: (e) => {
      for (const ev of translator.event(e.event, e.data)) {
        if (ev.type === 'done') { finished = true; continue; }
        if (ev.type === 'delta' && ev.finish_reason) finished = true;
        pending.push(ev);
      }
    },
  });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body) {
      parser.feed(decoder.decode(chunk as Buffer, { stream: true }));
      if (!pending.length) continue;
      const batch = pending;
      pending = [];
      yield batch;
      if (batch.some((ev) => ev.type === 'error')) return;
    }
  } catch (err) {
    yield [{ type: 'error', message: upstreamTransportError(err).message }];
    return;
  }
  if (!finished) yield [{ type: 'error', message: 'The upstream stream ended before it completed.' }];
}
