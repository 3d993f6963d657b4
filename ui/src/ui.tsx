// Small shared pieces: loading/error/empty states, a confirm dialog, a hook
// that loads from the API and can be reloaded.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.js';

export interface Loaded<T> { data: T | undefined; error: Error | undefined; loading: boolean; reload: () => void }

export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: Error | undefined; loading: boolean }>({ data: undefined, error: undefined, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, error: undefined, loading: false }),
      (error: Error) => live && setState({ data: undefined, error, loading: false }),
    );
    return () => { live = false; };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

/** An error and what to do about it: `hint` replaces the generic advice where the page knows better. */
export function ErrorBox({ error, retry, hint: given }: { error: Error; retry?: () => void; hint?: string }) {
  const hint = given ?? (error instanceof ApiError
    ? error.status === 403 ? 'This key is not an admin key. Sign in with an admin key to manage the organisation.'
      : error.status >= 500 ? 'The gateway could not answer. Check that Postgres is up, then retry.'
      : error.param ? `Check the field "${error.param}".` : ''
    : 'The gateway could not be reached. Check that sluice is running, then retry.');
  return (
    <div class="error" role="alert">
      <strong>{error instanceof ApiError ? `${error.status} ${error.code}` : 'Network error'}:</strong> {error.message}
      {hint && <p>{hint}</p>}
      {retry && <button type="button" onClick={retry}>Retry</button>}
    </div>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <div class="empty">{children}</div>;
}

export function Loading() {
  return <p class="muted" aria-live="polite">Loading…</p>;
}

/** A modal confirmation with the native <dialog>: focus is trapped and Escape cancels. */
export function Confirm({ open, title, children, confirmLabel, onConfirm, onCancel }: {
  open: boolean; title: string; children: ComponentChildren; confirmLabel: string; onConfirm: () => void; onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} onCancel={(e) => { e.preventDefault(); onCancel(); }} aria-labelledby="confirm-title">
      <h2 id="confirm-title">{title}</h2>
      <div>{children}</div>
      <div class="row end">
        <button type="button" onClick={onCancel}>Cancel</button>
        <button type="button" class="danger" onClick={onConfirm}>{confirmLabel}</button>
      </div>
    </dialog>
  );
}
