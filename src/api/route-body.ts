// Validation of route bodies. POST and PUT take a full definition (omitted
// optional fields take their defaults); PATCH takes any subset, merged onto the
// stored rule, and the merged result is validated like a full definition. Every
// 400 names the field at fault, unknown fields included (`match.model`).
//
// `action` depends on `action_kind`: a pin needs exactly {provider, model}; an
// auto rule's action is `{}` and may be omitted. Whether a pinned model is
// activated and configured is checked when a request uses the rule (409
// route_target_invalid), because activation and credentials change without the
// rule changing.
import { z } from 'zod';
import { GatewayError } from '../errors.js';
import { parse, storedText } from './validate.js';
import { MAX_FALLBACKS } from '../config/resilience-schema.js';
import type { RouteDefinition, RouteView } from '../store/routes-repo.js';

const INT32 = { min: -2_147_483_648, max: 2_147_483_647 };
const priority = z.number().int().min(INT32.min).max(INT32.max);
const match = z.strictObject({ requested_model: storedText(256) });
const target = z.strictObject({ provider: storedText(128), model: storedText(256) });
// Fallbacks are checked like the pin itself: shape here, activation when a request uses them.
const pinAction = target.extend({ fallbacks: z.array(target).max(MAX_FALLBACKS).optional() });
const autoAction = z.strictObject({}).default({});

const fields = {
  name: storedText(200),
  priority,
  enabled: z.boolean(),
  action_kind: z.enum(['pin', 'auto']),
  match: z.unknown(),
  action: z.unknown(),
};
const full = z.strictObject({ ...fields, priority: priority.default(0), enabled: z.boolean().default(true), action: z.unknown().optional() });
const partial = z.strictObject(fields).partial();

/** Read-only fields a client may echo back from a GET; they are ignored, never written. */
const READ_ONLY = ['id', 'object', 'created_at', 'updated_at'];

function withoutReadOnly(body: Record<string, unknown>): Record<string, unknown> {
  const out = { ...body };
  for (const k of READ_ONLY) delete out[k];
  return out;
}

function definition(d: z.output<typeof full>): RouteDefinition {
  const m = parse(match, d.match, ['match']);
  const action = d.action_kind === 'pin'
    ? (d.action === undefined ? missingPinAction() : withoutEmptyFallbacks(parse(pinAction, d.action, ['action'])))
    : parse(autoAction, d.action, ['action']);
  return { name: d.name, priority: d.priority, enabled: d.enabled, action_kind: d.action_kind, match: m, action };
}

/** No fallbacks and an empty list are one state, stored and shown as the plain {provider, model}. */
function withoutEmptyFallbacks(a: z.output<typeof pinAction>): RouteDefinition['action'] {
  const { fallbacks, ...pin } = a;
  return fallbacks?.length ? { ...pin, fallbacks } : pin;
}

function missingPinAction(): never {
  throw new GatewayError('invalid_request', 'action: a pin rule needs action.provider and action.model.', { param: 'action' });
}

/** POST and PUT bodies. */
export function parseDefinition(body: Record<string, unknown>): RouteDefinition {
  return definition(parse(full, withoutReadOnly(body)));
}

/** PATCH: the stored rule with the supplied fields changed. */
export function applyPatch(current: RouteView, body: Record<string, unknown>): RouteDefinition {
  const patch = parse(partial, withoutReadOnly(body));
  const kindChanged = patch.action_kind !== undefined && patch.action_kind !== current.action_kind;
  return definition({
    name: patch.name ?? current.name,
    priority: patch.priority ?? current.priority,
    enabled: patch.enabled ?? current.enabled,
    action_kind: patch.action_kind ?? current.action_kind,
    match: patch.match !== undefined ? patch.match : current.match,
    // A changed kind does not inherit the old kind's action.
    action: patch.action !== undefined ? patch.action : kindChanged ? undefined : current.action,
  });
}
