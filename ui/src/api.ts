// The console's only way to the gateway: the public /v1 API with the signed-in
// key as a bearer token, exactly as any client. The key lives in
// sessionStorage, so it is gone when the tab closes.
const KEY = 'sluice.console.key';

export const session = {
  get: (): string | null => sessionStorage.getItem(KEY),
  set: (key: string): void => sessionStorage.setItem(KEY, key),
  clear: (): void => sessionStorage.removeItem(KEY),
};

export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly param: string | null) {
    super(message);
  }
}

/** Called when the gateway answers 401: the key was revoked or is wrong. */
let onUnauthorized: () => void = () => {};
export function setUnauthorizedHandler(fn: () => void): void {
  onUnauthorized = fn;
}

export async function request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, key = session.get()): Promise<Response> {
  return fetch(path, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

export async function toError(res: Response): Promise<ApiError> {
  const text = await res.text();
  try {
    const e = (JSON.parse(text) as { error?: { code?: string; message?: string; param?: string | null } }).error;
    return new ApiError(res.status, e?.code ?? 'error', e?.message ?? text, e?.param ?? null);
  } catch {
    return new ApiError(res.status, 'error', text || res.statusText, null);
  }
}

export async function api<T>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<T> {
  const res = await request(method, path, body, headers);
  if (!res.ok) {
    const err = await toError(res);
    if (res.status === 401) onUnauthorized();
    throw err;
  }
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

export const qs = (params: Record<string, string | number | boolean | undefined | null>): string => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
};
