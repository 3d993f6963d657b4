// The contract's two request switches, `Gateway-Trace` and `Gateway-Dry-Run`,
// each `true` or `false`. Any other value is the caller's 400 naming the
// header: read as false, a `Gateway-Dry-Run: 1` or `yes` made a real, paid
// call of what the caller meant as a dry run.
import { GatewayError } from '../errors.js';
import type { GatewayRequest } from '../http/types.js';

export interface GatewayFlags { readonly trace: boolean; readonly dryRun: boolean }

const OFF: GatewayFlags = Object.freeze({ trace: false, dryRun: false });

function flag(value: string | undefined, name: string): boolean {
  if (value === undefined) return false;
  const v = value.toLowerCase();
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new GatewayError('invalid_request', `The ${name} header must be true or false, not ${JSON.stringify(value.slice(0, 40))}.`, { param: name });
}

/** Read once, before anything is admitted or spent, so that a bad value costs the caller nothing. */
export function gatewayFlags(req: GatewayRequest): GatewayFlags {
  const trace = req.headers['gateway-trace'];
  const dryRun = req.headers['gateway-dry-run'];
  if (trace === undefined && dryRun === undefined) return OFF;
  return { trace: flag(trace, 'Gateway-Trace'), dryRun: flag(dryRun, 'Gateway-Dry-Run') };
}
