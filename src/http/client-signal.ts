// Fires when the caller goes away, so that the upstream call is cancelled with
// it. undici accepts an EventEmitter as a request's `signal`; one costs a tenth
// of an AbortController (an EventTarget), which every request would pay for.
import { EventEmitter } from 'node:events';

export class ClientSignal extends EventEmitter {
  aborted = false;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }
}
