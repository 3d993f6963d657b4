// A bench's verdict on its own results. console.assert only prints, so a bench
// whose target was missed would still exit 0 and a script running it would
// read success; a failed check prints and sets the exit code instead.
export function check(ok: boolean, message: string): void {
  if (ok) return;
  console.error(`check failed: ${message}`);
  process.exitCode = 1;
}
