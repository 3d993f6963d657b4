// Per-key limits through /v1/api-keys: `limits` on create, PATCH of a key
// (name, role, limits; only the supplied fields change, and inside `limits`
// only the supplied limits: null clears one), and GET .../usage. A write
// applies on this instance at once and on the others at their next poll.
import { z } from 'zod';
import { budgetSchema, type LimitSpec } from '../config/resilience-schema.js';
import { GatewayError } from '../errors.js';
import type { Handler } from '../pipeline/handle-request.js';
import { readJsonObject } from '../pipeline/read-json.js';
import { NO_STORE, sendJson } from '../pipeline/reply.js';
import type { Services } from '../pipeline/services.js';
import { usageOf } from '../limits/usage.js';
import type { KeyView } from '../store/api-keys-repo.js';
import { patchKey } from '../store/api-key-patch.js';
import { getKeyLimits, isEmptySpec, putKeyLimits } from '../store/limits-repo.js';
import { inTransaction } from '../store/transaction.js';
import { requireAdmin } from './management-auth.js';
import { parse, storedText } from './validate.js';

const perMinute = z.number().int().positive().max(2_147_483_647);
const budget = budgetSchema.extend({ amount: z.number().positive().max(1e12) });
export const limitsBody = z.strictObject({
  rpm: perMinute.nullable().optional(),
  tpm: perMinute.nullable().optional(),
  budget_usd: budget.nullable().optional(),
}).nullable();

type LimitsPatch = z.output<typeof limitsBody>;

const patchBody = z.strictObject({
  name: storedText(200).optional(),
  role: z.enum(['admin', 'user']).optional(),
  limits: limitsBody.optional(),
});

/** A merge patch onto the current limits: an absent field stays, null clears it; `limits: null` clears all. */
export function mergeLimits(current: LimitSpec, patch: LimitsPatch): LimitSpec {
  if (patch === null) return {};
  const out: LimitSpec = { ...current };
  for (const k of ['rpm', 'tpm', 'budget_usd'] as const) {
    const v = patch[k];
    if (v === null) delete out[k];
    else if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  }
  return out;
}

export const withLimits = (view: KeyView, limits: LimitSpec | undefined): KeyView & { limits?: LimitSpec } =>
  (limits && !isEmptySpec(limits) ? { ...view, limits } : view);

/** Stores a new key's limits (POST /v1/api-keys) and applies them here. */
export async function createKeyLimits(svc: Services, keyId: string, org: string, patch: LimitsPatch | undefined): Promise<LimitSpec | undefined> {
  if (patch === undefined || patch === null) return undefined;
  const spec = mergeLimits({}, patch);
  if (isEmptySpec(spec)) return undefined;
  await putKeyLimits(svc.pool, keyId, org, spec);
  await svc.management.limitsChanged();
  return spec;
}

const notFound = (id: string) => new GatewayError('not_found', `No API key with id "${id}".`, { param: 'id' });

export const patchKeyHandler: Handler = async (svc, ctx, req, res, [id]) => {
  const org = await requireAdmin(svc, ctx, req);
  const body = parse(patchBody, await readJsonObject(req));
  // One transaction, begun by the key's row lock: a concurrent PATCH of the same key waits, then merges
  // its limits onto the ones this one wrote (until 2026-11-29 both merged onto the same read, and the
  // later write undid the earlier's). The announcements follow the commit, or others could read too early.
  const done = await inTransaction(svc.pool, async (client) => {
    const patched = await patchKey(client, org, id!, body);
    if (!patched) return undefined;
    let limits = (await getKeyLimits(client, [id!])).get(id!);
    if (body.limits !== undefined) {
      limits = mergeLimits(limits ?? {}, body.limits);
      await putKeyLimits(client, id!, org, limits);
    }
    return { patched, limits };
  });
  if (!done) throw notFound(id!);
  const { patched, limits } = done;
  if (body.limits !== undefined) await svc.management.limitsChanged();
  // A new role must not wait for cache expiry: the cached record is dropped everywhere, and read afresh.
  // Not as a revocation: that left a tombstone, and the key was refused with 401 for days (until 2026-11-29).
  if (body.role !== undefined) await svc.management.keyChanged(patched.hash);
  ctx.trace.status_code = 200;
  sendJson(res, 200, JSON.stringify({ object: 'api_key', ...withLimits(patched.view, limits) }), ctx.requestId, NO_STORE);
};

export const keyUsageHandler: Handler = async (svc, ctx, req, res, [id]) => {
  const org = await requireAdmin(svc, ctx, req);
  const { rows } = await svc.pool.query('SELECT 1 FROM api_keys WHERE id = $1 AND organization_id = $2 AND revoked_at IS NULL', [id, org]);
  if (!rows.length) throw notFound(id!);
  const limits = (await getKeyLimits(svc.pool, [id!])).get(id!);
  const usage = await usageOf(svc.limits, id!, org);
  ctx.trace.status_code = 200;
  sendJson(res, 200, JSON.stringify({
    object: 'api_key.usage', id, limits: limits && !isEmptySpec(limits) ? limits : null,
    organization_limits: svc.limits.orgSpec(org) ?? null, usage,
  }), ctx.requestId, NO_STORE);
};
