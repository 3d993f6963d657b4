// The append-only local spool: where batches go when Postgres cannot take
// them, and when the in-memory buffer overflows.
//
// Layout: <dir>/seg-<16-digit seq>.spool, one file per segment, replayed in
// seq order. Each record is one batch:
//   u32 LE payload length | u32 LE CRC32(payload) | msgpack(TraceRecord[])
// A process only appends to its own active segment, and a new process never
// reopens an old one, so a record torn by a crash can only be the last record
// of a segment. Replay skips any record whose CRC fails and reports it.
//
// Fsync policy (settings.spool_fsync):
//  - always (default): fdatasync after every record, before append() resolves,
//    and fsync of the directory when a segment is created. Survives power loss.
//  - interval: fdatasync at most every spool_fsync_interval_ms; power loss may
//    lose that window.
//  - never: the OS decides. Still survives kill -9, because write() has put the
//    bytes in the page cache before append() resolves.
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, writeSync } from 'node:fs';
import { open, readFile, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { Packr } from 'msgpackr';
import type { TraceRecord } from '../domain.js';
import { traceRecordOf, type BufferedTrace } from './copy-encoder.js';

export type FsyncPolicy = 'always' | 'interval' | 'never';

/** Plain maps, no record structures: a segment must decode in a process that did not write it. */
const packr = new Packr({ useRecords: false });
const HEADER = 8;
/** Bounds the memory replay needs: a segment is read whole. */
const MAX_SEGMENT_BYTES = 64 * 1024 * 1024;
const NAME = /^seg-(\d{16})\.spool$/;

export interface BadRecord { segment: string; offset: number; reason: string }
export interface SegmentContents { batches: TraceRecord[][]; bad: BadRecord[] }

/** Rows, however they were buffered: a line encoded in a gateway thread is stored as the row it encodes. */
export function encodeRecord(rows: readonly BufferedTrace[]): Buffer {
  const body = packr.pack(rows.map(traceRecordOf));
  const out = Buffer.allocUnsafe(HEADER + body.length);
  out.writeUInt32LE(body.length, 0);
  out.writeUInt32LE(crc32(body), 4);
  body.copy(out, HEADER);
  return out;
}

export function decodeSegment(segment: string, data: Buffer): SegmentContents {
  const batches: TraceRecord[][] = [];
  const bad: BadRecord[] = [];
  let off = 0;
  while (off < data.length) {
    if (data.length - off < HEADER) { bad.push({ segment, offset: off, reason: 'truncated header' }); break; }
    const len = data.readUInt32LE(off);
    const sum = data.readUInt32LE(off + 4);
    // A length past the end is a torn write, or a corrupt length: nothing after it can be framed.
    if (off + HEADER + len > data.length) { bad.push({ segment, offset: off, reason: 'truncated record' }); break; }
    const body = data.subarray(off + HEADER, off + HEADER + len);
    if (crc32(body) !== sum) bad.push({ segment, offset: off, reason: 'checksum mismatch' });
    else {
      try { batches.push(packr.unpack(body) as TraceRecord[]); } catch { bad.push({ segment, offset: off, reason: 'undecodable record' }); }
    }
    off += HEADER + len;
  }
  return { batches, bad };
}

export class Spool {
  private nextSeq = 0;
  private active: { path: string; fh: FileHandle; bytes: number; dirty: boolean } | undefined;
  private fsyncTimer: NodeJS.Timeout | undefined;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(
    readonly dir: string, private readonly fsync: FsyncPolicy, fsyncIntervalMs: number,
    private readonly maxSegmentBytes = MAX_SEGMENT_BYTES,
  ) {
    mkdirSync(dir, { recursive: true });
    for (const seq of this.existingSeqs()) this.nextSeq = Math.max(this.nextSeq, seq + 1);
    if (fsync === 'interval') {
      this.fsyncTimer = setInterval(() => { void this.syncActive(); }, fsyncIntervalMs);
      this.fsyncTimer.unref();
    }
  }

  private existingSeqs(): number[] {
    return readdirSync(this.dir).flatMap((f) => { const m = NAME.exec(f); return m ? [Number(m[1])] : []; });
  }

  private nameFor(seq: number): string {
    return join(this.dir, `seg-${String(seq).padStart(16, '0')}.spool`);
  }

  /** Sealed segments (not the one being appended to), oldest first. */
  sealedSegments(): string[] {
    const activeSeq = this.active ? this.nextSeq - 1 : -1;
    return this.existingSeqs().filter((s) => s !== activeSeq).sort((a, b) => a - b).map((s) => this.nameFor(s));
  }

  hasActiveData(): boolean {
    return this.active !== undefined && this.active.bytes > 0;
  }

  /**
   * Appends one batch. Resolves once the bytes are written (and synced, under
   * 'always'). Concurrent calls are chained, so records land in call order.
   */
  append(rows: readonly BufferedTrace[]): Promise<number> {
    return this.serially(() => this.appendNow(rows));
  }

  private serially<T>(op: () => Promise<T>): Promise<T> {
    const next = this.tail.then(op);
    this.tail = next.catch(() => {});
    return next;
  }

  private async appendNow(rows: readonly BufferedTrace[]): Promise<number> {
    const rec = encodeRecord(rows);
    if (this.active && this.active.bytes + rec.length > this.maxSegmentBytes && this.active.bytes > 0) await this.sealNow();
    if (!this.active) {
      const path = this.nameFor(this.nextSeq++);
      this.active = { path, fh: await open(path, 'a'), bytes: 0, dirty: false };
      if (this.fsync === 'always') this.syncDir();
    }
    try {
      await this.active.fh.write(rec);
      this.active.bytes += rec.length;
      if (this.fsync === 'always') await this.active.fh.datasync();
      else this.active.dirty = true;
    } catch (err) {
      // A partial write would misalign every later record of this segment: start a new one.
      await this.sealNow().catch(() => {});
      throw err;
    }
    return rec.length;
  }

  /** For the rare record after close(): a segment of its own, written synchronously. */
  appendSync(rows: readonly BufferedTrace[]): void {
    const fd = openSync(this.nameFor(this.nextSeq++), 'a');
    try {
      writeSync(fd, encodeRecord(rows));
      if (this.fsync !== 'never') fsyncSync(fd);
    } finally { closeSync(fd); }
  }

  /** Closes the active segment, after any pending append, so that replay may take it. */
  seal(): Promise<void> {
    return this.serially(() => this.sealNow());
  }

  private async sealNow(): Promise<void> {
    const a = this.active;
    if (!a) return;
    this.active = undefined;
    if (a.dirty && this.fsync !== 'never') await a.fh.datasync();
    await a.fh.close();
  }

  async read(path: string): Promise<SegmentContents> {
    return decodeSegment(path, await readFile(path));
  }

  async remove(path: string): Promise<void> {
    await unlink(path);
  }

  async close(): Promise<void> {
    if (this.fsyncTimer) clearInterval(this.fsyncTimer);
    await this.seal();
  }

  private async syncActive(): Promise<void> {
    const a = this.active;
    if (!a?.dirty) return;
    a.dirty = false;
    await a.fh.datasync().catch(() => { a.dirty = true; });
  }

  /** A new file's directory entry is only durable once the directory itself is synced. */
  private syncDir(): void {
    try { const fd = openSync(this.dir, 'r'); try { fsyncSync(fd); } finally { closeSync(fd); } } catch { /* not supported on every filesystem */ }
  }
}
