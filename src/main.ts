#!/usr/bin/env node
// The `sluice` command: parse CLI and environment, load config, then serve or
// run one management task. SIGTERM/SIGINT drain in-flight requests before exit.
import { Command, InvalidArgumentError } from 'commander';
import { createLogger } from './logger.js';
import { loadConfig, type Config } from './config/load-config.js';
import type { HttpChoice } from './http/create-server.js';
import { createKey, ensureOrganizations, listKeys, revokedKeyHash, revokeKey, type KeyRole } from './store/api-keys-repo.js';
import { defaultDataDir, openDatabase, type Database } from './store/database.js';
import { readMigrations } from './store/migrate.js';
import { announceRevocation } from './store/redis-revocations.js';
import { gatewayThreads } from './threads/thread-count.js';
import { StartStopped, startThreaded } from './threads/threaded-gateway.js';
import { applyGatewayFlags, semiSpaceFlag } from './threads/young-generation.js';

const env = process.env;
// An empty DATABASE_URL or REDIS_URL (`DATABASE_URL= sluice serve`) means unset, not a connection string.
const databaseUrl = (): string | undefined => env.DATABASE_URL || undefined;
const redisUrl = (): string | undefined => env.REDIS_URL || undefined;

const HTTP_KINDS = ['auto', 'uws', 'node'] as const;

/** Front-end choice from --http or SLUICE_HTTP; either beats `server.http` in the file, as PORT beats `server.port`. */
function httpKind(value: string): HttpChoice {
  if (!(HTTP_KINDS as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be one of ${HTTP_KINDS.join(', ')}`);
  return value as HttpChoice;
}

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be an integer from 0 to 65535');
  return n;
}

/** An environment variable read with a CLI option's parser; its error names the variable. */
function fromEnv<T>(name: string, parse: (value: string) => T): T | undefined {
  const value = env[name];
  if (!value) return undefined;
  try { return parse(value); } catch (err) { throw new Error(`${name} ${(err as Error).message}`); }
}

async function withDatabase<T>(fn: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase({ url: databaseUrl(), dataDir: defaultDataDir(env) });
  try { return await fn(db); } finally { await db.close(); }
}

const print = (v: unknown): void => { process.stdout.write(`${JSON.stringify(v, null, 2)}\n`); };

const program = new Command('sluice').description('OpenAI-compatible LLM gateway').showHelpAfterError();

program.command('serve')
  .description('run the gateway')
  .option('-c, --config <file>', 'YAML config file (default: $SLUICE_CONFIG)')
  .option('-p, --port <n>', 'port to listen on (default: $PORT or 8080)', port)
  .option('--http <kind>', 'front end: auto, uws or node (default: $SLUICE_HTTP, then server.http)', httpKind)
  .action(async (o: { config?: string; port?: number; http?: HttpChoice }) => {
    const log = createLogger(env.LOG_LEVEL ?? 'info');
    let config: Config;
    let http: HttpChoice | undefined;
    let listenPort: number;
    // Every setting is checked before anything starts, and a bad one named, whether it came from the file or the environment.
    try {
      config = loadConfig(o.config ?? env.SLUICE_CONFIG);
      http = o.http ?? fromEnv('SLUICE_HTTP', httpKind);
      listenPort = o.port ?? fromEnv('PORT', port) ?? config.server.port;
    } catch (err) {
      log.fatal((err as Error).message);
      process.exit(2);
    }
    const front = http ?? config.server.http;
    const threads = gatewayThreads(config);
    applyGatewayFlags();
    // A gateway in this process has the heap node was started with: the setting cannot reach it from here.
    if (threads === 1) {
      const flag = semiSpaceFlag();
      if (flag === undefined) {
        log.info({ semi_space_mb: config.server.semi_space_mb }, 'one gateway in this process: server.semi_space_mb applies only when node is started with --max-semi-space-size (npm start passes it)');
      } else if (!Number.isNaN(flag) && flag !== config.server.semi_space_mb) {
        log.warn({ semi_space_mb: config.server.semi_space_mb, max_semi_space_size: flag }, 'one gateway in this process: node was started with --max-semi-space-size, which is what it gets; server.semi_space_mb is not applied');
      }
    }
    // The handlers go in before anything starts: the port answers (and "listening" is logged)
    // before start() returns, and a SIGTERM with no handler yet kills the process outright,
    // leaving an embedded Postgres running. A signal during start waits for it, then drains.
    let stopping = false;
    // Assigned in this same tick, before any signal can be handled.
    let starting!: Promise<{ close(): Promise<void> }>;
    // Gateway threads still starting are not waited for (threaded-gateway.ts): those serving drain, the rest end.
    const startStop = new AbortController();
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'draining');
      startStop.abort();
      starting.then((app) => app.close(), (err: unknown) => { if (!(err instanceof StartStopped)) throw err; })
        .then(() => { log.info('stopped'); process.exit(0); }, (err) => { log.error({ err }, 'shutdown failed'); process.exit(1); });
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    starting = threads > 1
      ? startThreaded({
        config, configPath: o.config ?? env.SLUICE_CONFIG, threads, databaseUrl: databaseUrl(), redisUrl: redisUrl(),
        dataDir: defaultDataDir(env), host: config.server.host, port: listenPort, http: front, logLevel: env.LOG_LEVEL ?? 'info', log,
        stop: startStop.signal,
      })
      // With gateway threads, this thread runs only the trace writer and the orchestration:
      // the request path (and everything it imports) is loaded where it runs, not here too.
      : import('./app.js').then(({ startApp }) => startApp({
        config,
        databaseUrl: databaseUrl(),
        redisUrl: redisUrl(),
        dataDir: defaultDataDir(env),
        port: listenPort,
        http: front,
        logger: log,
      }));
    // A stop during the start is the stop handler's to finish; any other failure of the start fails the command.
    await starting.catch((err: unknown) => { if (!(err instanceof StartStopped)) throw err; });
  });

const keys = program.command('keys').description('manage API keys');
keys.command('create')
  .requiredOption('--org <org>', 'organisation id')
  .requiredOption('--name <name>', 'label for the key')
  .option('--role <role>', 'admin (may manage the organisation) or user (model endpoints only)', 'admin')
  .option('-c, --config <file>', 'config file, to check the organisation exists')
  .action(async (o: { org: string; name: string; role: string; config?: string }) => {
    if (o.role !== 'admin' && o.role !== 'user') throw new InvalidArgumentError('--role must be admin or user');
    const file = o.config ?? env.SLUICE_CONFIG;
    if (file && !loadConfig(file).organizations.has(o.org)) {
      process.stderr.write(`unknown organisation "${o.org}" in ${file}\n`);
      process.exit(2);
    }
    await withDatabase(async (db) => {
      await ensureOrganizations(db.pool, [o.org]);
      print({ object: 'api_key', organization_id: o.org, ...(await createKey(db.pool, o.org, o.name, o.role as KeyRole)) });
    });
  });
keys.command('list')
  .requiredOption('--org <org>', 'organisation id')
  .action(async (o: { org: string }) => withDatabase(async (db) => print({ data: await listKeys(db.pool, o.org) })));
keys.command('revoke')
  .argument('<id>', 'key id (key_...)')
  .option('-c, --config <file>', 'config file, for redis.key_prefix')
  .action(async (id: string, o: { config?: string }) => {
    // The config first: read after the revoke, a bad one failed the command with the key revoked but
    // not announced, and the retry then found no active key to announce.
    const prefix = loadConfig(o.config ?? env.SLUICE_CONFIG).redis.key_prefix;
    await withDatabase(async (db) => {
      const revoked = await revokeKey(db.pool, id);
      // A key revoked already is announced again: the retry of a revoke whose announcement failed.
      const hash = revoked ?? await revokedKeyHash(db.pool, id);
      if (!hash) { process.stderr.write(`no key ${id}\n`); process.exit(1); }
      // With Redis every instance drops the key at once; without it, within auth.cache_ttl_ms.
      const announced = redisUrl() ? await announceRevocation(redisUrl()!, prefix, hash, createLogger('error')) : false;
      print({ id, revoked: true, ...(revoked ? {} : { already_revoked: true }), announced });
    });
  });

program.command('migrate')
  .description('apply database migrations and exit')
  .action(async () => withDatabase(async () => print({ migrations: readMigrations().map((m) => m.name) })));

program.parseAsync(process.argv).catch((err) => {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
});
