// Reads the YAML file, validates it once, merges the built-in catalogue and
// providers, checks cross-references, and returns a deep-frozen Config.
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import type { ModelEntry } from '../domain.js';
import { DEFAULT_MODELS, DEFAULT_PROVIDERS } from './default-catalogue.js';
import { checkOrgFallbacks, retrySchema } from './resilience-schema.js';
import { configSchema, formatIssues, type OrganizationConfig, type ProviderConfig, type RawConfig } from './schema.js';

export interface Config {
  readonly server: RawConfig['server'];
  readonly upstream: RawConfig['upstream'];
  readonly auth: RawConfig['auth'];
  readonly redis: RawConfig['redis'];
  readonly policy: RawConfig['policy'];
  readonly traces: RawConfig['traces'];
  readonly responses: RawConfig['responses'];
  readonly telemetry: RawConfig['telemetry'];
  readonly providers: ReadonlyMap<string, ProviderConfig>;
  /** File entries first, then built-ins not overridden: the order resolution prefers. */
  readonly catalogue: readonly ModelEntry[];
  readonly organizations: ReadonlyMap<string, OrganizationConfig>;
  /** A digest of the file, so that compiled per-organisation state can be keyed by it. */
  readonly version: string;
}

export class ConfigError extends Error {
  constructor(source: string, detail: string) {
    super(`Invalid config ${source}:\n${detail}`);
    this.name = 'ConfigError';
  }
}

export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    if (value instanceof Map) for (const v of value.values()) deepFreeze(v);
    else for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

function crossCheck(raw: RawConfig, providers: Map<string, ProviderConfig>, catalogue: ModelEntry[]): string[] {
  const problems: string[] = [];
  const ids = new Set(catalogue.map((m) => m.id));
  // One id may be served by two providers (the listing shows the one a pinned call takes), but the
  // same pair twice is a copy, of which the first would silently win, pricing and context window too.
  const pairs = new Set<string>();
  raw.models.forEach((m, i) => {
    if (!providers.has(m.provider)) problems.push(`models.${i}.provider: unknown provider "${m.provider}"`);
    const pair = `${m.provider}\0${m.id}`;
    if (pairs.has(pair)) problems.push(`models.${i}.id: duplicate model "${m.id}" of provider "${m.provider}"`);
    pairs.add(pair);
  });
  const seen = new Set<string>();
  raw.organizations.forEach((o, i) => {
    if (seen.has(o.id)) problems.push(`organizations.${i}.id: duplicate organisation "${o.id}"`);
    seen.add(o.id);
    o.models.forEach((id, j) => { if (!ids.has(id)) problems.push(`organizations.${i}.models.${j}: unknown model "${id}"`); });
    o.auto_preference?.forEach((id, j) => {
      if (!o.models.includes(id)) problems.push(`organizations.${i}.auto_preference.${j}: "${id}" is not an activated model`);
    });
  });
  problems.push(...checkOrgFallbacks(raw.organizations, catalogue));
  return problems;
}

export function buildConfig(input: unknown, source = '(inline)'): Config {
  const parsed = configSchema.safeParse(input ?? {});
  if (!parsed.success) throw new ConfigError(source, formatIssues(parsed.error));
  const raw = parsed.data;
  const providers = new Map<string, ProviderConfig>();
  for (const [name, p] of Object.entries(DEFAULT_PROVIDERS)) providers.set(name, { no_auth: false, responses_api: false, retry: retrySchema.parse({}), ...p });
  for (const [name, p] of Object.entries(raw.providers)) providers.set(name, p);
  const overridden = new Set(raw.models.map((m) => `${m.provider}/${m.id}`));
  const catalogue: ModelEntry[] = [...raw.models, ...DEFAULT_MODELS.filter((m) => !overridden.has(`${m.provider}/${m.id}`))];
  const problems = crossCheck(raw, providers, catalogue);
  if (problems.length) throw new ConfigError(source, problems.join('\n'));
  return deepFreeze({
    server: raw.server,
    upstream: raw.upstream,
    auth: raw.auth,
    redis: raw.redis,
    policy: raw.policy,
    traces: raw.traces,
    responses: raw.responses,
    telemetry: raw.telemetry,
    providers,
    catalogue,
    organizations: new Map(raw.organizations.map((o) => [o.id, o])),
    version: createHash('sha256').update(JSON.stringify(raw)).digest('hex').slice(0, 16),
  });
}

export function loadConfig(file: string | undefined): Config {
  if (!file) return buildConfig({}, '(defaults)');
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch (err) { throw new ConfigError(file, `cannot read: ${(err as Error).message}`); }
  let doc: unknown;
  // Merge keys (`<<: *defaults`) as YAML 1.1 has them, which many generated configs use.
  try { doc = parseYaml(text, { merge: true }); } catch (err) { throw new ConfigError(file, `YAML: ${(err as Error).message}`); }
  return buildConfig(doc, file);
}
