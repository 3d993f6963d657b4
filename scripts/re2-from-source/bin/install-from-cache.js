#!/usr/bin/env node
// Stands in for install-artifact-from-github (a dependency of sluice's own,
// package.json). re2's install script runs `install-from-cache … || node-gyp
// rebuild`, and the real fetcher first downloads a prebuilt binary from
// GitHub's release pages: a download at install time from outside the npm
// registry. Failing here sends re2 straight to its build from the source npm
// shipped (about 70 s), with no environment variable to remember.
console.log('sluice: re2 is built from its source, never fetched prebuilt.');
process.exit(1);
