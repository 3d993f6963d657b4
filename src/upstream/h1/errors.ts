// What an upstream connection fails a call with. The messages read as undici's
// did, so logs and the caller's 502/504 messages did not change with the client.

/** The upstream did not connect, answer or go on answering in time: a 504 (upstream_timeout). */
export class UpstreamTimeoutError extends Error {
  constructor(message: 'Connect Timeout Error' | 'Headers Timeout Error' | 'Body Timeout Error') {
    super(message);
    this.name = 'UpstreamTimeoutError';
  }
}

/** The connection closed, or the upstream broke HTTP/1.1, before the answer was whole: a 502. */
export class UpstreamSocketError extends Error {
  constructor(message: string, options?: { cause: unknown }) {
    super(message, options);
    this.name = 'UpstreamSocketError';
  }
}

/** A request head the client refuses to write (it would smuggle a second request): nothing was sent. */
export class InvalidRequestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidRequestError';
  }
}
