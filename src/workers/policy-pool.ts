// The Piscina pool that runs large scans off the main thread. Every failure
// (timeout, full queue, a crashed thread, an error reply) comes back as a
// PolicyFailure, so the engine has one place that turns it into
// policy_unavailable and no path lets unscanned text through.
//
// Threads are never terminated, and are shared by every engine in the
// process. re2 1.23 keeps RE2.Set's constructor template in one process-wide
// handle that each thread loading the addon resets; once the thread that
// loaded it last has exited, the next load frees a dangling handle and aborts
// the process ("Check failed: node->IsInUse()", node-re2 issue #235; seen
// here when one pool was destroyed and another started). So: a timeout is
// enforced on the main thread and the late task is left to finish (scans are
// linear, so it does), a closed engine stops sending rather than destroying
// threads, and the threads are Piscina's minimum, so none is ever recycled.
// Piscina unrefs idle threads, so they do not hold the process open.
import { Piscina } from 'piscina';
import type { OrgPolicyConfig } from '../policy/config-schema.js';
import type { ModerateReply, PolicyFailure, PolicyReply, PolicyTask, ScanReply } from './protocol.js';

export interface PolicyPoolOptions {
  threads: number;
  taskTimeoutMs: number;
  maxQueue: number;
}

/** One organisation's policy as the pool sends it. */
export interface PoolPolicy {
  orgId: string;
  version: string;
  config: OrgPolicyConfig;
}

interface Threads {
  piscina: Piscina<PolicyTask, PolicyReply>;
  /** Every thread has loaded the worker module (or exited). */
  loaded: Promise<void>;
}

/** One set of threads per size, for the life of the process. */
const shared = new Map<number, Threads>();

/**
 * The message a Piscina thread posts once its module has loaded. A process
 * that exits while a thread is still instantiating that ES module aborts in
 * Node 20 ("v8::Module::IsGraphAsync must be used on an instantiated module"),
 * as a SIGTERM during start-up did; so closing waits for it.
 */
const PISCINA_READY = '_WORKER_READY';

/** Closing waits at most this for the threads to load: a Piscina that stopped saying so must not hang shutdown. */
const LOAD_WAIT_MS = 5_000;

function whenLoaded(piscina: Piscina<PolicyTask, PolicyReply>): Promise<void> {
  return Promise.all(piscina.threads.map((w) => new Promise<void>((ok) => {
    const onMessage = (m: unknown) => { if ((m as Record<string, unknown> | null)?.[PISCINA_READY] === true) done(); };
    const done = () => { w.off('message', onMessage); w.off('exit', done); ok(); };
    w.on('message', onMessage);
    w.once('exit', done);
  }))).then(() => undefined);
}

function threadsOf(size: number): Threads {
  let threads = shared.get(size);
  if (threads === undefined) {
    const piscina = new Piscina<PolicyTask, PolicyReply>({
      // Compiled layout: this file and the worker sit side by side in dist/src/workers.
      filename: new URL('./policy.worker.js', import.meta.url).href,
      minThreads: size,
      maxThreads: size,
    });
    // Piscina starts its minimum of threads in its constructor, before any of them can have loaded.
    threads = { piscina, loaded: whenLoaded(piscina) };
    shared.set(size, threads);
  }
  return threads;
}

const failure = (message: string): PolicyFailure => ({ ok: false, code: 'policy_failed', message });

export class PolicyPool {
  readonly #piscina: Piscina<PolicyTask, PolicyReply>;
  readonly #loaded: Promise<void>;
  readonly #timeoutMs: number;
  readonly #maxQueue: number;
  /** The version each organisation's config was last attached at; later tasks go without it. */
  readonly #sent = new Map<string, string>();
  #inFlight = 0;
  #closed = false;

  constructor(opts: PolicyPoolOptions) {
    ({ piscina: this.#piscina, loaded: this.#loaded } = threadsOf(opts.threads));
    this.#timeoutMs = opts.taskTimeoutMs;
    this.#maxQueue = opts.maxQueue;
  }

  scan(policy: PoolPolicy, texts: string[], groups: number[][] = []): Promise<ScanReply> {
    return this.#run((ref) => ({ op: 'scan', policy: ref, texts, groups }), policy) as Promise<ScanReply>;
  }

  moderate(policy: PoolPolicy, text: string): Promise<ModerateReply> {
    return this.#run((ref) => ({ op: 'moderate', policy: ref, text }), policy) as Promise<ModerateReply>;
  }

  /** Sends a task built around the policy reference; resends once with the config if the thread has not seen it. */
  async #run(build: (ref: PolicyTask['policy']) => PolicyTask, policy: PoolPolicy): Promise<PolicyReply> {
    const { orgId, version, config } = policy;
    const first = this.#sent.get(orgId) !== version;
    if (first) this.#sent.set(orgId, version);
    let reply = await this.#send(build(first ? { orgId, version, config } : { orgId, version }));
    if (!reply.ok && reply.code === 'config_missing') reply = await this.#send(build({ orgId, version, config }));
    return reply;
  }

  async #send(task: PolicyTask): Promise<PolicyReply> {
    if (this.#closed) return failure('the policy pool is closed');
    if (this.#inFlight >= this.#maxQueue) return failure('the policy pool queue is full');
    // Counted until the thread is done with it, not until the caller gave up,
    // so tasks left running after a timeout still count against the cap.
    this.#inFlight++;
    const done = this.#piscina.run(task).finally(() => this.#inFlight--);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<PolicyFailure>((resolve) => {
      timer = setTimeout(() => resolve(failure(`no answer within ${this.#timeoutMs} ms`)), this.#timeoutMs);
    });
    try {
      return await Promise.race([done, timeout]);
    } catch (err) {
      return failure(err instanceof Error ? err.message : String(err));
    } finally {
      clearTimeout(timer);
    }
  }

  get threads(): number {
    return this.#piscina.threads.length;
  }

  /** For /readyz: the threads exist, this engine still uses them, and the queue has room. */
  ready(): boolean {
    return !this.#closed && this.#piscina.threads.length > 0 && this.#inFlight < this.#maxQueue;
  }

  /**
   * Stops this engine's use of the threads; they stay for other engines (see
   * the top of this file). Resolves once they have loaded, so that the
   * process may exit (see PISCINA_READY).
   */
  async close(): Promise<void> {
    this.#closed = true;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.#loaded, new Promise<void>((ok) => { timer = setTimeout(ok, LOAD_WAIT_MS); })]);
    clearTimeout(timer);
  }
}
