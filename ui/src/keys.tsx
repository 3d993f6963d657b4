// API keys: list, create (the secret is shown once, with a copy button),
// revoke after confirmation, and each key's usage over the last 24 hours.
import { useState } from 'preact/hooks';
import { api, ApiError, qs } from './api.js';
import { int, time, usd } from './format.js';
import { Confirm, Empty, ErrorBox, Loading, useLoad } from './ui.js';

interface Key { id: string; name: string; prefix: string; role: string; created_at: string; last_used_at: string | null }
interface KeyUsage { requests: number; cost_usd: number; total_tokens: number }

/** The key's last 24 hours from the usage rollups (GET /v1/api-keys/{id}/usage is about limits, not spend over time). */
async function keyUsage(id: string): Promise<KeyUsage> {
  return (await api<{ totals: KeyUsage }>('GET', `/v1/usage${qs({ range: '24h', key: id })}`)).totals;
}

function UsageCell({ id }: { id: string }) {
  const [u, setU] = useState<KeyUsage | Error | undefined>();
  if (!u) return <button type="button" onClick={() => keyUsage(id).then(setU, setU)}>Show 24 h</button>;
  if (u instanceof Error) return <span class="bad">{u.message}</span>;
  return <span data-testid="key-usage">{int(u.requests)} req · {usd(u.cost_usd)}</span>;
}

export function Keys() {
  const keys = useLoad(() => api<{ data: Key[] }>('GET', '/v1/api-keys'), []);
  const [name, setName] = useState('');
  const [role, setRole] = useState('user');
  const [created, setCreated] = useState<{ name: string; key: string } | undefined>();
  const [copied, setCopied] = useState(false);
  const [formError, setFormError] = useState<Error | undefined>();
  const [revoking, setRevoking] = useState<Key | undefined>();
  const [revokeError, setRevokeError] = useState<Error | undefined>();

  async function create(e: Event) {
    e.preventDefault();
    setFormError(undefined);
    try {
      const k = await api<Key & { key: string }>('POST', '/v1/api-keys', { name, role });
      setCreated({ name: k.name, key: k.key });
      setCopied(false);
      setName('');
      keys.reload();
    } catch (err) { setFormError(err as Error); }
  }
  async function revoke() {
    const k = revoking!;
    setRevoking(undefined);
    try { await api('DELETE', `/v1/api-keys/${encodeURIComponent(k.id)}`); setRevokeError(undefined); } catch (err) { setRevokeError(err as Error); }
    keys.reload();
  }
  return (
    <div>
      <h1>API keys</h1>
      <form class="card form" onSubmit={create}>
        <h2>Create a key</h2>
        <label>Name<input name="name" required maxLength={200} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} /></label>
        <label>Role<select name="role" value={role} onChange={(e) => setRole((e.target as HTMLSelectElement).value)}>
          <option value="user">user: model endpoints only</option><option value="admin">admin: may manage the organisation</option></select></label>
        <button type="submit">Create key</button>
        {formError && <ErrorBox error={formError} />}
      </form>
      {created && (
        <div class="card secret" role="status">
          <h2>Key “{created.name}” created</h2>
          <p>Copy it now: this is the only time the secret is shown. Only its hash is stored.</p>
          <div class="row"><code data-testid="new-secret">{created.key}</code>
            <button type="button" onClick={() => navigator.clipboard.writeText(created.key).then(() => setCopied(true), () => setCopied(false))}>{copied ? 'Copied' : 'Copy'}</button>
            <button type="button" onClick={() => setCreated(undefined)}>Done</button></div>
        </div>
      )}
      {revokeError && <ErrorBox error={revokeError} />}
      {keys.error ? <ErrorBox error={keys.error} retry={keys.reload} /> : !keys.data ? <Loading /> : keys.data.data.length === 0 ? <Empty>No active keys. Create one above.</Empty> : (
        <div class="scroll"><table>
          <thead><tr><th scope="col">Name</th><th scope="col">Id</th><th scope="col">Prefix</th><th scope="col">Role</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Usage</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
          <tbody>{keys.data.data.map((k) => (
            <tr key={k.id} data-key-id={k.id}>
              <td>{k.name}</td><td><code>{k.id}</code></td><td><code>{k.prefix}…</code></td><td>{k.role}</td><td>{time(k.created_at)}</td><td>{time(k.last_used_at)}</td>
              <td><UsageCell id={k.id} /></td>
              <td><button type="button" class="danger" onClick={() => setRevoking(k)} aria-label={`Revoke ${k.name}`}>Revoke</button></td>
            </tr>
          ))}</tbody>
        </table></div>
      )}
      <Confirm open={!!revoking} title="Revoke this key?" confirmLabel="Revoke" onConfirm={revoke} onCancel={() => setRevoking(undefined)}>
        <p>“{revoking?.name}” ({revoking?.id}) will stop working on every instance within seconds. This cannot be undone.</p>
      </Confirm>
    </div>
  );
}

export { ApiError };
