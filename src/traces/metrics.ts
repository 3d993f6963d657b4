// Counters the pipeline keeps for the metrics endpoint, and the logger shape
// it accepts (pino's, without importing a global one).

export interface TraceLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface TraceMetrics {
  /** Rows committed by the normal COPY path. */
  rowsWritten: number;
  /** Rows appended to the spool (Postgres failing, or the buffer full). */
  rowsSpooled: number;
  /** Spooled rows later committed by replay. */
  rowsReplayed: number;
  /** Rows not inserted because their request_id was already stored. */
  duplicatesSkipped: number;
  /** Spool records that failed their checksum or were torn; their rows are lost. */
  badSpoolRecords: number;
  spoolErrors: number;
  writeFailures: number;
  /** Traces without an organisation (failed authentication): counted, never written. */
  unattributed: number;
  /** Rows recorded after close() that the spool refused too. */
  rowsLost: number;
  /** Rows held in memory, not yet in Postgres or the spool. */
  bufferDepth: number;
  /** False while the writer is backing off after a Postgres failure. */
  postgresAvailable: boolean;
}

export class TraceCounters {
  rowsWritten = 0;
  rowsSpooled = 0;
  rowsReplayed = 0;
  duplicatesSkipped = 0;
  badSpoolRecords = 0;
  spoolErrors = 0;
  writeFailures = 0;
  unattributed = 0;
  rowsLost = 0;

  snapshot(bufferDepth: number, postgresAvailable: boolean): TraceMetrics {
    return { ...this, bufferDepth, postgresAvailable };
  }
}
