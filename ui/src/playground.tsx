// Playground: a chat or, when the gateway serves /v1/responses, a Responses
// request (either streamed or not) with Gateway-Trace: true, so the answer
// ends with the gateway block.
import { useState } from 'preact/hooks';
import { api, request, toError } from './api.js';
import { usd } from './format.js';
import { ErrorBox, useLoad } from './ui.js';

interface Model { id: string; configured: boolean }
interface Gateway { provider?: string; model?: string; route_reason?: string; cost_usd?: number; request_id?: string; [k: string]: unknown }

/** Reads an SSE body, handing each `data:` payload to `onData`; an `event: error` becomes a thrown Error. */
async function readSse(res: Response, onData: (data: string) => void): Promise<void> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let i: number;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      if (event === 'error') throw new Error((JSON.parse(data) as { error: { message: string } }).error.message);
      if (data) onData(data);
    }
  }
}

export function Playground() {
  const models = useLoad(() => api<{ data: Model[] }>('GET', '/v1/models'), []);
  // A GET on /v1/responses answers route_not_found only when the gateway has no Responses API at all.
  const responses = useLoad(async () => {
    const res = await request('GET', '/v1/responses');
    if (res.status !== 404) return true;
    return (await toError(res)).code !== 'route_not_found';
  }, []);
  const [model, setModel] = useState('');
  const [text, setText] = useState('Hello! What can you do?');
  const [stream, setStream] = useState(true);
  const [kind, setKind] = useState<'chat' | 'responses'>('chat');
  const [out, setOut] = useState('');
  const [gateway, setGateway] = useState<Gateway | undefined>();
  const [error, setError] = useState<Error | undefined>();
  const [busy, setBusy] = useState(false);
  const chosen = model || models.data?.data.find((m) => m.configured && m.id !== 'auto')?.id || 'auto';

  async function send(e: Event) {
    e.preventDefault();
    setOut(''); setGateway(undefined); setError(undefined); setBusy(true);
    try {
      if (kind === 'responses') {
        const res = await request('POST', '/v1/responses', { model: chosen, input: text, stream }, { 'gateway-trace': 'true' });
        if (!res.ok) throw await toError(res);
        if (!stream) {
          const body = (await res.json()) as { output_text?: string; gateway?: Gateway };
          setOut(body.output_text ?? JSON.stringify(body, null, 2));
          setGateway(body.gateway);
          return;
        }
        // Typed events: the text arrives as output_text deltas, the gateway block on the final response object.
        let acc = '';
        await readSse(res, (data) => {
          const ev = JSON.parse(data) as { type: string; delta?: string; response?: { gateway?: Gateway } };
          if (ev.type === 'response.output_text.delta' && ev.delta) { acc += ev.delta; setOut(acc); }
          if ((ev.type === 'response.completed' || ev.type === 'response.incomplete') && ev.response?.gateway) setGateway(ev.response.gateway);
        });
        return;
      }
      const res = await request('POST', '/v1/chat/completions', { model: chosen, stream, messages: [{ role: 'user', content: text }] }, { 'gateway-trace': 'true' });
      if (!res.ok) throw await toError(res);
      if (!stream) {
        const body = (await res.json()) as { choices: Array<{ message: { content: string | null } }>; gateway?: Gateway };
        setOut(body.choices[0]?.message.content ?? '');
        setGateway(body.gateway);
        return;
      }
      let acc = '';
      await readSse(res, (data) => {
        if (data === '[DONE]') return;
        const chunk = JSON.parse(data) as { choices: Array<{ delta?: { content?: string | null } }>; gateway?: Gateway };
        const d = chunk.choices[0]?.delta?.content;
        if (d) { acc += d; setOut(acc); }
        if (chunk.gateway) setGateway(chunk.gateway);
      });
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  }
  return (
    <div>
      <h1>Playground</h1>
      <form class="card form" onSubmit={send}>
        {responses.data && (
          <label>API<select name="api" value={kind} onChange={(e) => setKind((e.target as HTMLSelectElement).value as 'chat' | 'responses')}>
            <option value="chat">Chat completions</option><option value="responses">Responses</option></select></label>
        )}
        <label>Model<select name="model" value={chosen} onChange={(e) => setModel((e.target as HTMLSelectElement).value)}>
          {(models.data?.data ?? []).map((m) => <option key={m.id} value={m.id} disabled={!m.configured}>{m.id}{m.configured ? '' : ' (no credential)'}</option>)}
        </select></label>
        <label>Message<textarea name="message" rows={4} value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} /></label>
        <label class="inline"><input name="stream" type="checkbox" checked={stream} onChange={(e) => setStream((e.target as HTMLInputElement).checked)} /> Stream</label>
        <button type="submit" disabled={busy}>{busy ? 'Sending…' : 'Send'}</button>
      </form>
      {models.error && <ErrorBox error={models.error} retry={models.reload} />}
      {error && <ErrorBox error={error} />}
      {(out || gateway) && (
        <div class="two">
          <section class="card"><h2>Answer</h2><pre class="code" data-testid="answer" aria-live="polite">{out}</pre></section>
          {gateway && (
            <section class="card"><h2>Gateway</h2>
              <dl class="fields" data-testid="gateway">{Object.entries(gateway).map(([k, v]) => (
                <div key={k}><dt>{k}</dt><dd data-field={k}>{k === 'cost_usd' ? usd(v as number) : k === 'request_id' ? <a href={`#/traces/${encodeURIComponent(String(v))}`}>{String(v)}</a> : typeof v === 'object' ? JSON.stringify(v) : String(v)}</dd></div>
              ))}</dl>
            </section>
          )}
        </div>
      )}
    </div>
  );
}
