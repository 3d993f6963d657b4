// Provider credentials. Environment variables are read once; mounted files are
// re-checked on a short timer so that `configured` follows a file that is
// removed or restored (a rotated Kubernetes secret, say) within seconds.
import { readFile } from 'node:fs/promises';
import type { Config } from './load-config.js';

export class Credentials {
  private readonly values = new Map<string, string | undefined>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly config: Config, env: NodeJS.ProcessEnv = process.env) {
    for (const [name, p] of config.providers) {
      if (!p.api_key_file) this.values.set(name, p.api_key_env ? nonEmpty(env[p.api_key_env]) : undefined);
    }
  }

  /** Reads mounted files now, then every `intervalMs`. */
  async start(intervalMs = 1_000): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => { void this.refresh(); }, intervalMs);
    this.timer.unref();
  }

  stop(): void { clearInterval(this.timer); }

  async refresh(): Promise<void> {
    await Promise.all([...this.config.providers].filter(([, p]) => p.api_key_file).map(async ([name, p]) => {
      try {
        this.values.set(name, nonEmpty((await readFile(p.api_key_file!, 'utf8')).trim()));
      } catch {
        this.values.set(name, undefined);
      }
    }));
  }

  get(provider: string): string | undefined { return this.values.get(provider); }

  isConfigured(provider: string): boolean {
    const p = this.config.providers.get(provider);
    if (!p) return false;
    if (p.kind === 'mock' || p.no_auth) return true;
    return this.values.get(provider) !== undefined;
  }
}

const nonEmpty = (s: string | undefined): string | undefined => (s ? s : undefined);
