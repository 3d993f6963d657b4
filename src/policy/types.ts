// The contract between the request pipeline and the policy engine (DLP, prompt
// shield, output moderation). The pipeline knows nothing else of src/policy.

export interface InputScan {
  /** The caller's texts, in order, with every match replaced by its placeholder. */
  texts: string[];
  /** Number of substitutions (DLP and shield `redact`). */
  redactions: number;
  /** Substitutions by detector type, e.g. { email: 2 }: what a dry run shows, never the values. */
  byType: Record<string, number>;
}

export type OutputVerdict =
  | { blocked: false }
  | { blocked: true; category: string; rule: string };

export type ChunkStep =
  | { blocked: false; release: string }
  | { blocked: true; category: string; rule: string };

/** Chunked moderation for one stream: holds back a window long enough that no match can straddle what was released. */
export interface ChunkedModerator {
  push(text: string): ChunkStep;
  /**
   * End of output: releases what was held back, unless it completes a match.
   * More may be pushed after it: what was released stays the left context, so
   * a match that begins before the finish and ends after it is still found.
   */
  finish(): ChunkStep;
}

export type OutputMode = 'off' | 'buffered' | 'chunked';

export interface PolicyEngine {
  /**
   * `groups` lists the texts the model reads as one, by index (reading-units.ts).
   * Throws GatewayError('prompt_blocked') on a shield block, GatewayError('policy_unavailable') when scanning failed.
   */
  scanInput(orgId: string, texts: string[], groups?: number[][]): Promise<InputScan>;
  outputMode(orgId: string): OutputMode;
  moderate(orgId: string, text: string): Promise<OutputVerdict>;
  chunked(orgId: string): ChunkedModerator;
  /** False when scans would fail for want of workers (closed, none running, queue full); true when scanning runs inline. */
  ready(): boolean;
  /** Threads of its scan pool (0 when it scans inline), for /metrics. */
  readonly workers: number;
  close(): Promise<void>;
}
