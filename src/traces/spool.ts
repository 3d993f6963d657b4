// The append-only local spool: where batches go when Postgres cannot take
// them, and when the in-memory buffer overflows.
//
// Layout: <dir>/seg-<16-digit seq>.spool, one file per segment, replayed in
// seq order. Each record is one batch:
//   u32 LE payload length | u32 LE CRC32(payload) | msgpack(TraceRecord[])
// A process only appends to its own active segment, and a new process never
// reopens an old one, so a record torn by a crash can only be the last record
// of a segment. Replay skips any record whose CRC fails and reports it; past a
// corrupt length it finds the next record by its CRC.
//
// Fsync policy (settings.spool_fsync):
//  - always (default): fdatasync after every record, before append() resolves,
//    and fsync of the directory when a segment is created. Survives power loss.
//  - interval: fdatasync at most every spool_fsync_interval_ms; power loss may
//    lose that window.
//  - never: the OS decides. Still survives kill -9, because write() has put the
//    bytes in the page cache before append() resolves.
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, writeSync } from 'node:fs';
import { open, readFile, rename, unlink, type FileHandle } from 'node:fs/promises';
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

/** `torn`: a truncated last record with nothing after it, as a crash mid-append leaves; anything else is corruption. */
export interface BadRecord { segment: string; offset: number; reason: string; torn: boolean }
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

/** msgpack's array headers (fixarray, array 16, array 32): every record's body is an array of rows. */
const isArrayHeader = (b: number | undefined): boolean => b !== undefined && ((b >= 0x90 && b <= 0x9f) || b === 0xdc || b === 0xdd);

type Framed = { rows: TraceRecord[]; next: number } | { reason: string };

/** Whether a whole record whose body matches its checksum starts at `c`. */
function checksummed(data: Buffer, c: number): boolean {
  if (c + HEADER > data.length) return false;
  const end = c + HEADER + data.readUInt32LE(c);
  return end <= data.length && crc32(data.subarray(c + HEADER, end)) === data.readUInt32LE(c + 4);
}

/** The record at `off`: its rows and where the next begins, or why it is not one. */
function recordAt(data: Buffer, off: number): Framed {
  if (data.length - off < HEADER) return { reason: 'truncated header' };
  const len = data.readUInt32LE(off);
  if (off + HEADER + len > data.length) return { reason: 'truncated record' };
  const body = data.subarray(off + HEADER, off + HEADER + len);
  if (crc32(body) !== data.readUInt32LE(off + 4)) return { reason: 'checksum mismatch' };
  try {
    return { rows: packr.unpack(body) as TraceRecord[], next: off + HEADER + len };
  } catch {
    return { reason: 'undecodable record' };
  }
}

/**
 * The first offset from `from` where a whole record with a matching checksum
 * begins; -1 when there is none, GAVE_UP when the search ran out of budget. A
 * corrupt length frames nothing after it, so the records behind it are found
 * by their checksums instead. Cheap tests come first (an array header where
 * the body starts, a length that fits), and the bytes checksummed for candidates
 * that do not line up with a next record are bounded by a few times the
 * segment, so a segment of noise cannot hold the thread.
 */
function resync(data: Buffer, from: number): number {
  let budget = 4 * data.length;
  for (let c = from; c + HEADER < data.length; c++) {
    if (!isArrayHeader(data[c + HEADER])) continue;
    const len = data.readUInt32LE(c);
    if (len === 0 || c + HEADER + len > data.length) continue;
    // A candidate followed by the segment's end or by what looks like another record is checked
    // without charge: noise seldom lines up so. Any other spends the budget.
    const after = c + HEADER + len;
    const framed = after === data.length || (after + HEADER < data.length && isArrayHeader(data[after + HEADER]) && after + HEADER + data.readUInt32LE(after) <= data.length);
    if (!framed && (budget -= len) < 0) return GAVE_UP;
    if (checksummed(data, c)) return c;
  }
  return -1;
}

const GAVE_UP = -2;

export function decodeSegment(segment: string, data: Buffer): SegmentContents {
  const batches: TraceRecord[][] = [];
  const bad: BadRecord[] = [];
  let off = 0;
  while (off < data.length) {
    const r = recordAt(data, off);
    if ('rows' in r) { batches.push(r.rows); off = r.next; continue; }
    // A body that fails its checksum under a length that fits: the length is most likely
    // sound, and the next record starts where it says (or the segment ends there).
    const skip = r.reason === 'checksum mismatch' || r.reason === 'undecodable record' ? off + HEADER + data.readUInt32LE(off) : -1;
    const next = skip === data.length || (skip > 0 && checksummed(data, skip)) ? skip : resync(data, off + 1);
    // Torn: a truncated last record with nothing after it, as a crash mid-append leaves. A search
    // that gave up proves nothing, so that is corruption.
    bad.push({ segment, offset: off, reason: r.reason, torn: next === -1 && r.reason.startsWith('truncated') });
    if (next < 0 || next >= data.length) break;
    off = next;
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

  /**
   * Deletes a replayed segment, or, when some of it was corrupt (more than a
   * crash's torn tail), keeps it as `<name>.bad`, never replayed again, for
   * whoever investigates the disk.
   */
  async remove(path: string, corrupt = false): Promise<void> {
    if (corrupt) await rename(path, `${path}.bad`);
    else await unlink(path);
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
