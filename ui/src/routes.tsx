// Routing rules in evaluation order: create and edit (the API's own validation
// messages are shown), enable/disable, delete, and a dry run that shows which
// model a request would reach and why. The form carries every field of a rule,
// fallbacks included, because PUT resets whatever it omits.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, request, toError } from './api.js';
import { usd } from './format.js';
import { Confirm, Empty, ErrorBox, Loading, useLoad } from './ui.js';

interface Target { provider: string; model: string }
interface Route {
  id: string; name: string; priority: number; enabled: boolean; action_kind: 'pin' | 'auto';
  match: { requested_model: string }; action: { provider?: string; model?: string; fallbacks?: Target[] };
}
interface Resolution { provider: string; model: string; route_reason: string; estimated_cost_usd?: number; requested_model: string }

const BLANK = { name: '', priority: '0', enabled: true, action_kind: 'pin' as 'pin' | 'auto', requested_model: '', provider: '', model: '', fallbacks: [] as Target[] };

/** An ordered list of {provider, model}: tried in this order when the pinned model fails. */
function FallbackList({ items, onChange }: { items: Target[]; onChange: (next: Target[]) => void }) {
  const update = (i: number, k: keyof Target) => (e: Event) =>
    onChange(items.map((t, j) => (j === i ? { ...t, [k]: (e.target as HTMLInputElement).value } : t)));
  const move = (i: number, by: number) => {
    const next = [...items];
    [next[i], next[i + by]] = [next[i + by]!, next[i]!];
    onChange(next);
  };
  return (
    <fieldset class="fallbacks">
      <legend>Fallbacks, tried in order when the pinned model fails</legend>
      {items.length === 0 ? <p class="muted">None: a failure of the pinned model is returned to the caller.</p> : (
        <ol>{items.map((t, i) => (
          <li key={i} data-fallback={i}>
            <span class="muted">{i + 1}.</span>
            <input name={`fallback-provider-${i}`} aria-label={`Fallback ${i + 1} provider`} placeholder="provider" value={t.provider} onInput={update(i, 'provider')} />
            <input name={`fallback-model-${i}`} aria-label={`Fallback ${i + 1} model`} placeholder="model" value={t.model} onInput={update(i, 'model')} />
            <button type="button" aria-label={`Move fallback ${i + 1} up`} disabled={i === 0} onClick={() => move(i, -1)}>↑</button>
            <button type="button" aria-label={`Move fallback ${i + 1} down`} disabled={i === items.length - 1} onClick={() => move(i, 1)}>↓</button>
            <button type="button" aria-label={`Remove fallback ${i + 1}`} onClick={() => onChange(items.filter((_, j) => j !== i))}>✕</button>
          </li>
        ))}</ol>
      )}
      <button type="button" onClick={() => onChange([...items, { provider: '', model: '' }])}>Add fallback</button>
    </fieldset>
  );
}

function TryIt() {
  const [model, setModel] = useState('');
  const [text, setText] = useState('hello');
  const [result, setResult] = useState<Resolution | Error | undefined>();
  async function run(e: Event) {
    e.preventDefault();
    const res = await request('POST', '/v1/chat/completions', { model, messages: [{ role: 'user', content: text }] }, { 'gateway-dry-run': 'true' });
    setResult(res.ok ? ((await res.json()) as Resolution) : await toError(res));
  }
  return (
    <form class="card form" onSubmit={run} aria-labelledby="tryit">
      <h2 id="tryit">Try it (dry run)</h2>
      <p class="muted">Sends <code>Gateway-Dry-Run: true</code>: nothing reaches a provider and nothing is spent.</p>
      <label>Model or alias<input name="try-model" required value={model} onInput={(e) => setModel((e.target as HTMLInputElement).value)} placeholder="auto" /></label>
      <label>Message<input name="try-message" value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} /></label>
      <button type="submit">Resolve</button>
      {result instanceof Error ? <ErrorBox error={result} /> : result && (
        <dl class="fields" data-testid="dry-run">
          <div><dt>provider</dt><dd>{result.provider}</dd></div><div><dt>model</dt><dd>{result.model}</dd></div>
          <div><dt>route_reason</dt><dd data-field="route_reason">{result.route_reason}</dd></div>
          <div><dt>estimated cost</dt><dd>{usd(result.estimated_cost_usd)}</dd></div>
        </dl>
      )}
    </form>
  );
}

export function Routes() {
  const routes = useLoad(() => api<{ data: Route[]; has_more: boolean }>('GET', '/v1/routes?limit=200'), []);
  const [form, setForm] = useState(BLANK);
  const [editing, setEditing] = useState<string | undefined>();
  const [formError, setFormError] = useState<Error | undefined>();
  const [deleting, setDeleting] = useState<Route | undefined>();
  const [rowError, setRowError] = useState<Error | undefined>();
  const nameInput = useRef<HTMLInputElement>(null);
  // The form is below the list: Edit moves focus there, so a keyboard user lands on what they asked to change.
  useEffect(() => { if (editing) nameInput.current?.focus(); }, [editing]);
  const set = (k: keyof typeof BLANK) => (e: Event) => {
    const t = e.target as HTMLInputElement;
    setForm({ ...form, [k]: t.type === 'checkbox' ? t.checked : t.value });
  };

  async function save(e: Event) {
    e.preventDefault();
    setFormError(undefined);
    const body = {
      name: form.name, priority: Number(form.priority), enabled: form.enabled, action_kind: form.action_kind,
      match: { requested_model: form.requested_model },
      // A row left wholly blank is dropped; a half-filled one goes to the API, whose 400 names it.
      action: form.action_kind === 'pin' ? { provider: form.provider, model: form.model, fallbacks: form.fallbacks.filter((t) => t.provider || t.model) } : {},
    };
    try {
      if (editing) await api('PUT', `/v1/routes/${encodeURIComponent(editing)}`, body);
      else await api('POST', '/v1/routes', body);
      setForm(BLANK);
      setEditing(undefined);
      routes.reload();
    } catch (err) { setFormError(err as Error); }
  }
  async function toggle(r: Route) {
    try { await api('PATCH', `/v1/routes/${encodeURIComponent(r.id)}`, { enabled: !r.enabled }); setRowError(undefined); } catch (err) { setRowError(err as Error); }
    routes.reload();
  }
  async function remove() {
    const r = deleting!;
    setDeleting(undefined);
    try { await api('DELETE', `/v1/routes/${encodeURIComponent(r.id)}`); setRowError(undefined); } catch (err) { setRowError(err as Error); }
    routes.reload();
  }
  function edit(r: Route) {
    setEditing(r.id);
    setForm({ name: r.name, priority: String(r.priority), enabled: r.enabled, action_kind: r.action_kind, requested_model: r.match.requested_model, provider: r.action.provider ?? '', model: r.action.model ?? '', fallbacks: (r.action.fallbacks ?? []).map((t) => ({ ...t })) });
  }
  return (
    <div>
      <h1>Routes</h1>
      <p class="muted">Rules are evaluated from the highest priority down; the first enabled rule whose requested model matches wins.</p>
      {rowError && <ErrorBox error={rowError} />}
      {routes.error ? <ErrorBox error={routes.error} retry={routes.reload} /> : !routes.data ? <Loading /> : routes.data.data.length === 0 ? (
        <Empty>No routing rules: requests resolve by the model catalogue's aliases and <code>auto</code>. Add a rule below to pin a name to a model.</Empty>
      ) : (
        <div class="scroll"><table>
          <thead><tr><th scope="col" class="num">Priority</th><th scope="col">Name</th><th scope="col">When model is</th><th scope="col">Then</th><th scope="col">Enabled</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
          <tbody>{routes.data.data.map((r) => (
            <tr key={r.id} data-route={r.name} class={r.enabled ? '' : 'disabled'}>
              <td class="num">{r.priority}</td><td>{r.name}</td><td><code>{r.match.requested_model}</code></td>
              <td>{r.action_kind === 'pin' ? <>
                <code>{r.action.provider}/{r.action.model}</code>
                {r.action.fallbacks?.length ? <span class="muted" data-testid="route-fallbacks"> then <code>{r.action.fallbacks.map((t) => `${t.provider}/${t.model}`).join(', ')}</code></span> : null}
              </> : 'auto picker'}</td>
              <td><label class="inline"><input type="checkbox" checked={r.enabled} onChange={() => toggle(r)} aria-label={`Enable ${r.name}`} /> {r.enabled ? 'on' : 'off'}</label></td>
              <td><div class="row"><button type="button" onClick={() => edit(r)}>Edit</button><button type="button" class="danger" onClick={() => setDeleting(r)}>Delete</button></div></td>
            </tr>
          ))}</tbody>
        </table></div>
      )}
      <div class="two">
        <form class="card form" onSubmit={save}>
          <h2>{editing ? 'Edit rule' : 'New rule'}</h2>
          <label>Name<input name="route-name" ref={nameInput} value={form.name} onInput={set('name')} /></label>
          <label>Priority<input name="route-priority" type="number" value={form.priority} onInput={set('priority')} /></label>
          <label>When the request's model is<input name="route-match" value={form.requested_model} onInput={set('requested_model')} /></label>
          <label>Action<select name="route-kind" value={form.action_kind} onChange={set('action_kind')}><option value="pin">pin to a model</option><option value="auto">use the auto picker</option></select></label>
          {form.action_kind === 'pin' && <>
            <label>Provider<input name="route-provider" value={form.provider} onInput={set('provider')} /></label>
            <label>Model<input name="route-model" value={form.model} onInput={set('model')} /></label>
            <FallbackList items={form.fallbacks} onChange={(fallbacks) => setForm({ ...form, fallbacks })} />
          </>}
          <label class="inline"><input type="checkbox" checked={form.enabled} onChange={set('enabled')} /> Enabled</label>
          <div class="row"><button type="submit">{editing ? 'Save' : 'Create rule'}</button>
            {editing && <button type="button" onClick={() => { setEditing(undefined); setForm(BLANK); }}>Cancel</button>}</div>
          {formError && <ErrorBox error={formError} />}
        </form>
        <TryIt />
      </div>
      <Confirm open={!!deleting} title="Delete this rule?" confirmLabel="Delete" onConfirm={remove} onCancel={() => setDeleting(undefined)}>
        <p>“{deleting?.name}” is removed for new requests within seconds. Disabling it instead can be undone.</p>
      </Confirm>
    </div>
  );
}
