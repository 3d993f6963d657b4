// The console shell: sign-in, hash routing, navigation and the theme toggle.
// Everything it shows comes from the public /v1 API with the signed-in key.
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, request, session, setUnauthorizedHandler, toError } from './api.js';
import { Keys } from './keys.js';
import { Overview } from './overview.js';
import { Playground } from './playground.js';
import { Routes } from './routes.js';
import { TraceDetail, Traces } from './traces.js';

const PAGES = [['overview', 'Overview'], ['traces', 'Traces'], ['keys', 'Keys'], ['routes', 'Routes'], ['playground', 'Playground']] as const;
const THEME = 'sluice.console.theme';

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

function SignIn({ onSignedIn, notice }: { onSignedIn: () => void; notice: string }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState(notice);
  const [busy, setBusy] = useState(false);
  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      // Listing keys needs the admin role, so it tells a user key from an admin key.
      const res = await request('GET', '/v1/api-keys', undefined, {}, key.trim());
      if (res.ok) { session.set(key.trim()); onSignedIn(); return; }
      const err = await toError(res);
      setError(err.status === 403 ? 'This is a user key: it may call the models but not manage the organisation. Sign in with an admin key (sluice keys create makes one).'
        : err.status === 401 ? 'This key is not valid: it is mistyped, unknown or revoked.' : `${err.status} ${err.code}: ${err.message}`);
    } catch {
      setError('The gateway could not be reached. Check that sluice is running.');
    } finally {
      setBusy(false);
    }
  }
  return (
    <main class="signin">
      <form class="card form" onSubmit={submit}>
        <h1>sluice console</h1>
        <p>Sign in with an <strong>admin</strong> API key of your organisation. It is kept in this tab only (sessionStorage) and sent only to this gateway's <code>/v1</code> API.</p>
        <label>API key<input name="api-key" type="password" autoComplete="off" required value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} placeholder="sk-sluice-…" /></label>
        <button type="submit" disabled={busy}>{busy ? 'Checking…' : 'Sign in'}</button>
        {error && <p class="error" role="alert">{error}</p>}
      </form>
    </main>
  );
}

/** A hash segment as text; a malformed escape (`%E0`), which decodeURIComponent throws on and would blank the page, is kept as typed. */
function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function App() {
  const [signedIn, setSignedIn] = useState(!!session.get());
  const [notice, setNotice] = useState('');
  const [theme, setTheme] = useState(localStorage.getItem(THEME) ?? '');
  const hash = useHash();
  useEffect(() => {
    setUnauthorizedHandler(() => { session.clear(); setNotice('The gateway refused this key (revoked or invalid). Sign in again.'); setSignedIn(false); });
  }, []);
  useEffect(() => {
    if (theme) document.documentElement.dataset.theme = theme; else delete document.documentElement.dataset.theme;
    localStorage.setItem(THEME, theme);
  }, [theme]);
  const dark = theme ? theme === 'dark' : matchMedia('(prefers-color-scheme: dark)').matches;
  if (!signedIn) return <SignIn notice={notice} onSignedIn={() => { setNotice(''); setSignedIn(true); }} />;
  const [page = 'overview', arg] = hash.replace(/^#\/?/, '').split('/');
  const body = page === 'traces' && arg ? <TraceDetail id={decoded(arg)} />
    : page === 'traces' ? <Traces /> : page === 'keys' ? <Keys /> : page === 'routes' ? <Routes />
    : page === 'playground' ? <Playground /> : <Overview theme={theme || (dark ? 'dark' : 'light')} />;
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => { e.preventDefault(); document.getElementById('main')?.focus(); }}>Skip to content</a>
      <header>
        <span class="brand">sluice</span>
        <nav aria-label="Console">
          {PAGES.map(([id, label]) => <a key={id} href={`#/${id}`} aria-current={page === id || (id === 'overview' && !PAGES.some(([p]) => p === page)) ? 'page' : undefined}>{label}</a>)}
        </nav>
        <button type="button" onClick={() => setTheme(dark ? 'light' : 'dark')} aria-label={`Switch to ${dark ? 'light' : 'dark'} mode`}>{dark ? '☀' : '☾'}</button>
        <button type="button" onClick={() => { session.clear(); setSignedIn(false); }}>Sign out</button>
      </header>
      <main id="main" tabIndex={-1}>{body}</main>
    </>
  );
}

export { ApiError };
render(<App />, document.getElementById('app')!);
